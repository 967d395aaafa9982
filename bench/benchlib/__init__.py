"""The bench's one library: what the scripts in bench/ share. A script
imports it by name (its folder, bench/, is first on `sys.path` when it
runs); bench/README.md says which script writes which section of which
doc page, from which results file.

- `paths`: the repository root, a campaign's folders and files, a
  single-config script's run folder and page.
- `docs`: the marked sections of the doc pages and `--write-docs`, the one
  flag that writes them.
- `results`: the results files, what they keep of a run, the machine
  record, the table cells the sections share.
- `configs`: the bundled configs as documents, written and validated; the
  smoke run's tiny stand-ins.
- `runs`: a campaign's jobs and their loop, one config run in a fresh
  process (`kdplug run` or the teacher job), resumable run folders.
- `teacher_job`: a campaign's teacher row.
- `single_run`: the results file of a script that benchmarks one config.
- `timing`: padding counts and interleaved timing rounds.
"""

from .configs import SmokeSetup
from .configs import load_base
from .configs import validate_config
from .configs import write_config
from .docs import TITLE
from .docs import add_measurement_arguments
from .docs import add_write_docs_argument
from .docs import markers
from .docs import measurement_section
from .docs import write_marked_section
from .paths import BENCH
from .paths import PERFORMANCE_PAGE
from .paths import RESULTS_PAGE
from .paths import ROOT
from .paths import add_single_run_arguments
from .paths import campaign_paths
from .paths import single_run_dirs
from .results import cpu_model
from .results import load_results
from .results import machine
from .results import machine_text
from .results import mean_sd_cell
from .results import now
from .results import run_summary
from .results import save_results
from .results import time_cell
from .results import usable_cpus
from .runs import Job
from .single_run import entry_config
from .single_run import resumes
from .single_run import store_run
from .single_run import stored_run
from .single_run import wall_text
from .runs import parse_seeds
from .runs import prepare_run_dir
from .runs import run_child
from .runs import run_config
from .runs import run_jobs
from .runs import run_subprocess
from .teacher_job import teacher_job
from .timing import add_interleaved_arguments
from .timing import interleaved_rates
from .timing import padding_stats

__all__ = [
    "BENCH", "Job", "PERFORMANCE_PAGE", "RESULTS_PAGE", "ROOT", "SmokeSetup", "TITLE",
    "add_interleaved_arguments", "add_measurement_arguments", "add_single_run_arguments",
    "add_write_docs_argument", "campaign_paths", "cpu_model", "entry_config",
    "interleaved_rates",
    "load_base", "load_results", "machine", "machine_text", "markers", "mean_sd_cell",
    "measurement_section", "now", "padding_stats", "parse_seeds", "prepare_run_dir",
    "resumes", "run_child", "run_config", "run_jobs", "run_subprocess", "run_summary",
    "save_results", "single_run_dirs", "store_run", "stored_run", "teacher_job",
    "time_cell",
    "usable_cpus", "validate_config", "wall_text",
    "write_config", "write_marked_section",
]
