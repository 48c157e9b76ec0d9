from mblint.cli import main

main()
