"""Evaluation: measuring models (accuracy, task metrics, latency), the
run's report and plots, and exporting the student."""

from kdplug._lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "accuracy": "kdplug.evaluation.measure",
    "count_params": "kdplug.evaluation.measure",
    "latency_ms": "kdplug.evaluation.measure",
    "predict_outputs": "kdplug.evaluation.measure",
    "task_metrics": "kdplug.evaluation.task_metrics",
    "write_report": "kdplug.evaluation.report",
    "StudentExporter": "kdplug.evaluation.export",
})
