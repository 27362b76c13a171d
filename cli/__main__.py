"""``python -m cli``: the ``diarist`` command without its console script."""
from cli.main import main

main()
