"""Export: a trained run -> one self-describing ONNX file plus its JSON, checked against torch."""

from horde.deploy.onnx_export import ExportError, ExportReport, export_run, load_policy

__all__ = ["ExportError", "ExportReport", "export_run", "load_policy"]
