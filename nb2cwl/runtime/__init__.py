"""Code that runs inside a workflow step. It imports nothing else from nb2cwl.

The package is copied next to the generated workflow as `nb2cwl_runtime`, so a step needs only
Python and the notebook's own libraries (cloudpickle for general values).
"""
