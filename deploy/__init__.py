"""Export: a trained run -> a robot-ready bundle (ONNX, its JSON, golden I/O, runner, engine builder), verified."""

from horde.deploy.bundle import ExportReport, VerifyReport, export_run, find_bundles, report_dict, verify_bundle
from horde.deploy.onnx_export import ExportError
from horde.train.checkpoint import load_policy

__all__ = ["ExportError", "ExportReport", "VerifyReport", "export_run", "find_bundles", "load_policy",
           "report_dict", "verify_bundle"]
