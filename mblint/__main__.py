from mblint.cli import run

run()
