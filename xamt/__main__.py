"""``python -m xamt``: the same as the ``xamt`` command."""

from xamt.cli import app

app(prog_name="xamt")
