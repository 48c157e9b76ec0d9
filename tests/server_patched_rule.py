"""``mblint server`` with rule CG003 changed, for the language server's tests: ``crash`` makes it
raise (the crash is reported to the client and the server goes on), ``slow`` makes it take
half a second (a newer edit arrives while a check runs)."""

import sys
import time

from mblint.cli import main
from mblint.plugins import load_plugins


def crash(self, cfg, ctx):
    raise ZeroDivisionError("a rule's bug")


def slow(self, cfg, ctx):
    time.sleep(0.5)
    return ()


[rule] = [rule for rule in load_plugins().rules if rule.id == "CG003"]
rule.check = {"crash": crash, "slow": slow}[sys.argv[1]]
sys.exit(main(["server", *sys.argv[2:]]))
