"""The marked sections of the doc pages and `--write-docs`, the one flag
with which every bench script writes its section.

Each script owns one section of a page (bench/README.md says which),
written between its own `<!-- name:start -->` / `<!-- name:end -->`
markers; text outside the markers (introductions written by hand, other
scripts' sections) is never changed.
"""

import argparse
import os
import re
import sys

from kdplug import storage

from .paths import ROOT

TITLE = "# Benchmark results\n"
# Old spellings of `--write-docs`, kept as deprecated aliases.
OLD_SPELLINGS = ("--out", "--write")


def markers(name):
    """`("<!-- name:start -->", "<!-- name:end -->")`.

    Args:
        name: the section's name.
    """
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def write_marked_section(path, name, section, title=TITLE):
    """Puts `section` between `name`'s markers in `path`, atomically, and
    returns `path`.

    A missing file is created with `title`; missing markers are appended at
    the end. A marker quoted in a code span (right after a backtick) is
    prose, not a marker. Unbalanced or repeated markers (one without the
    other, end before start, either twice) stop the script: they are fixed
    by hand, never guessed.

    Args:
        path: the doc page.
        name: the section's name (its markers).
        section: the Markdown between the markers.
        title: the first line of a page that does not exist yet.

    Examples:

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     page = os.path.join(folder, "results.md")
    ...     _ = write_marked_section(page, "fastbert", "## FastBERT ...")
    ...     print(open(page, encoding="utf-8").read())
    # Benchmark results
    <BLANKLINE>
    <!-- fastbert:start -->
    ## FastBERT ...
    <!-- fastbert:end -->
    <BLANKLINE>
    """
    start, end = markers(name)
    block = f"{start}\n{section.rstrip()}\n{end}"
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    else:
        text = title
    starts, ends = ([m for m in re.finditer(re.escape(marker), text)
                     if text[m.start() - 1:m.start()] != "`"] for marker in (start, end))
    if len(starts) > 1 or len(ends) > 1 or len(starts) != len(ends) or (
            starts and starts[0].start() > ends[0].start()):
        raise SystemExit(f"{path}: unbalanced or repeated {start} / {end} markers; "
                         "fix them by hand")
    if starts:
        text = text[:starts[0].start()] + block + text[ends[0].end():]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    return storage.write_text(path, text)


def add_write_docs_argument(parser, page=None, always=None):
    """`--write-docs [PATH]`: the section goes into PATH. Its old spellings
    (`--out PATH`, `--write [PATH]`) still work, with a warning.

    Args:
        parser: the script's `argparse.ArgumentParser`.
        page: for a script that writes its section only when asked: the page
            `--write-docs` alone writes (`args.write_docs` is None without
            the flag).
        always: for a script that rewrites its section after every run (a
            campaign): where it does by default, for the help text; the flag
            then only sends the section elsewhere (`campaign_paths` and
            `single_run_dirs` fill in the default).
    """
    if page is not None:
        where = f"write the section into PATH (default {os.path.relpath(page, ROOT)})"
    else:
        where = f"the page whose section is rewritten after every run (default {always})"
    parser.add_argument("--write-docs", nargs="?", const=page, metavar="PATH", help=where)
    for spelling in OLD_SPELLINGS:
        parser.add_argument(spelling, dest="write_docs", nargs="?", const=page,
                            action=_DeprecatedSpelling, help=argparse.SUPPRESS)


class _DeprecatedSpelling(argparse.Action):
    """An old spelling of `--write-docs`: the same value, and a warning."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: {option_string} is deprecated, use --write-docs",
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_measurement_arguments(parser, name, page):
    """`--results`, `--render-only` and `--write-docs` of a script that
    measures once and keeps its latest measurement in
    `bench/results/<name>.json` (`measurement_section`).

    Args:
        parser: the script's `argparse.ArgumentParser`.
        name: the results file's name, without `.json`.
        page: the doc page `--write-docs` alone writes.
    """
    parser.add_argument("--results", default=os.path.join(ROOT, "bench", "results",
                                                          f"{name}.json"),
                        help=f"results JSON (default bench/results/{name}.json)")
    parser.add_argument("--render-only", action="store_true",
                        help="the section from the stored results, measuring nothing")
    add_write_docs_argument(parser, page)


def measurement_section(args, name, measure, render, title=TITLE):
    """Measures (`measure()`, the result stored in `args.results`), or with
    `--render-only` reads the stored result; prints the section `render`
    makes of it and, with `--write-docs`, writes it between `name`'s
    markers. Returns the section.

    Args:
        args: the parsed options (`add_measurement_arguments`).
        name: the section's name.
        measure: `fn() -> result`, a JSON-able dict.
        render: `fn(result) -> section`.
        title: the first line of a page that does not exist yet.
    """
    if args.render_only:
        result = storage.read_json(args.results)
        if result is None:
            raise SystemExit(f"--render-only: no stored measurement at {args.results} "
                             f"(measure first: run the script without --render-only)")
    else:
        result = measure()
        storage.write_json(args.results, result)
    section = render(result)
    print(section)
    if args.write_docs:
        write_marked_section(args.write_docs, name, section, title=title)
    return section
