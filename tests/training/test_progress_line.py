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
    # the first step compiles: its time, not a speed (and the test below)
    assert lines[0].endswith(", first step 0 s (compiling)")
    assert lines[1].endswith(" steps/s, ETA 0s")


def test_speed_and_eta_count_the_steps_after_the_first(kdplug_log):
    """100 s to compile the first step, then 1 s a step: the line during
    the first step says so; later ones say 1.0 steps/s and the rest of the
    epoch at that speed (before: 11 steps in 110 s, 0.1 steps/s)."""
    now = [0.0]
    line = ProgressLine("distill", interval=30.0, clock=lambda: now[0])
    line.set_params({"epochs": 2, "steps": 331})
    line.on_train_begin()
    line.on_epoch_begin(0)
    now[0] = 100.0
    line.on_train_batch_end(0, {"loss": 0.5})
    for batch in range(1, 40):
        now[0] += 1.0
        line.on_train_batch_end(batch, {"loss": 0.5})
    assert kdplug_log() == [
        "stage distill: epoch 1/2, step 1/331, loss 0.5000, first step 100 s (compiling)",
        "stage distill: epoch 1/2, step 31/331, loss 0.5000, 1.0 steps/s, ETA 5:00",
    ]

