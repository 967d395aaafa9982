"""`ProgressLine`: a line per epoch, in-epoch lines only every `interval`."""

from kdplug.training.callbacks import ProgressLine


def drive(callback, batches=3):
    callback.set_params({"epochs": 2, "steps": batches})
    callback.on_epoch_begin(0)
    for b in range(batches):
        callback.on_train_batch_end(b, {"loss": 1.0 / (b + 1), "accuracy": 0.5})
    callback.on_epoch_end(0, {"loss": 0.25, "val_loss": 0.5})


def test_one_line_per_epoch_and_none_in_between_before_the_interval(kdplug_log):
    drive(ProgressLine("distill", interval=3600))
    [line] = kdplug_log()
    assert line.startswith("stage distill: epoch 1/2 done in ")
    assert line.endswith(": loss 0.2500, val_loss 0.5000")


def test_in_epoch_lines_after_the_interval(kdplug_log):
    drive(ProgressLine("distill", interval=0))
    lines = kdplug_log()
    assert len(lines) == 4
    assert lines[0].startswith("stage distill: epoch 1/2, step 1/3, loss 1.0000, ")
    assert lines[2].startswith("stage distill: epoch 1/2, step 3/3, loss 0.3333, ")
    assert lines[0].endswith(" steps/s")
