"""The README's Python block, run as written: a new user pastes it after
the README's own install line, in a fresh checkout, and gets figures on
disk (issue 33: it used to need matplotlib the install line did not bring,
and its plot call showed and saved nothing)."""

import os
import pathlib
import re
import subprocess
import sys


def _readme_python(root: pathlib.Path) -> tuple[str, str]:
    """The install line and the Python block of the README's Python
    section."""
    text = (root / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python"):]
    section = section[: section.index("\n## ", 3)]
    sh = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    py = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return sh, py


def test_readme_install_line_brings_matplotlib(root):
    sh, py = _readme_python(root)
    install = next(l for l in sh.splitlines() if l.startswith("pip install"))
    if "plot" in py:
        assert "[plot]" in install, f"the block plots but the install line is {install!r}"


def test_readme_python_block_runs_and_leaves_figures(root, tmp_path):
    _, py = _readme_python(root)
    # A fresh checkout's layout as far as the block sees it: scenarios/ beside
    # the working directory, nothing else.
    (tmp_path / "scenarios").symlink_to(root / "scenarios")
    env = dict(os.environ, MPLBACKEND="Agg")
    p = subprocess.run([sys.executable, "-c", py], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    saved = re.findall(r"savefig\(\"([^\"]+)\"\)", py)
    assert saved, "the block saves no figure"
    for f in saved:
        out = tmp_path / f
        assert out.exists(), f"{f} was not written"
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{f} is not a PNG"
        assert out.stat().st_size > 10_000, f"{f} is nearly empty"
    # The summary table of the sweep is printed: two points.
    assert "0.001" in p.stdout and "0.01" in p.stdout
    # Nothing lands beside the scenarios but out/.
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out", "scenarios"]
