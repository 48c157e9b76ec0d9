"""``mblint server`` with rule CG003 made to raise, for tests/test_server_hostile.py: a rule
that crashes is reported to the client, and the server goes on."""

import sys

from mblint.cli import main
from mblint.plugins import load_plugins


def crash(self, cfg, ctx):
    raise ZeroDivisionError("a rule's bug")


[rule] = [rule for rule in load_plugins().rules if rule.id == "CG003"]
rule.check = crash
sys.exit(main(["server", *sys.argv[1:]]))
