"""examples/quickstart.ipynb runs from top to bottom."""

import nbclient
import nbformat


def test_quickstart_notebook_runs(root):
    path = root / "examples" / "quickstart.ipynb"
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # The figures were drawn (one image per plot cell).
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2
