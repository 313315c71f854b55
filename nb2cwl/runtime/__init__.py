"""Code that runs inside a workflow step. It imports nothing else from nb2cwl.

A generated workflow holds the package as `nb2cwl_runtime.zip`, which its steps import from
(zipimport), so a step needs only Python and the notebook's own libraries (cloudpickle for
general values).
"""
