"""python -m nb2cwl"""

from nb2cwl.cli import run

run()
