"""Evaluation: measuring models (accuracy, task metrics, latency), the
run's report and plots, exporting the student and measuring its exports."""

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports

if TYPE_CHECKING:  # they need TensorFlow: loaded on first use (`lazy_exports`)
    from kdplug.evaluation.export import StudentExporter
    from kdplug.evaluation.export_measure import ExportMeasurer
    from kdplug.evaluation.export_measure import export_and_measure
    from kdplug.evaluation.measure import accuracy
    from kdplug.evaluation.measure import count_params
    from kdplug.evaluation.measure import first_examples
    from kdplug.evaluation.measure import latency_ms
    from kdplug.evaluation.measure import masked_accuracy
    from kdplug.evaluation.measure import predict_outputs
    from kdplug.evaluation.plots import LOSS_CURVES
    from kdplug.evaluation.plots import loss_curves
    from kdplug.evaluation.report import history_lines
    from kdplug.evaluation.report import plot_lines
    from kdplug.evaluation.report import resumed_parts
    from kdplug.evaluation.report import resumed_text
    from kdplug.evaluation.report import time_lines
    from kdplug.evaluation.report import write_report
    from kdplug.evaluation.span_decoding import SpanAnswer
    from kdplug.evaluation.span_decoding import best_span
    from kdplug.evaluation.squad_metrics import best_no_answer_threshold
    from kdplug.evaluation.squad_metrics import exact_match
    from kdplug.evaluation.squad_metrics import f1_score
    from kdplug.evaluation.squad_metrics import normalize_answer
    from kdplug.evaluation.squad_metrics import squad_scores
    from kdplug.evaluation.task_metrics import task_metrics

__getattr__, __dir__, __all__ = lazy_exports(__name__)
