"""nb2cwl inside Jupyter: the IPython extension (`%load_ext nb2cwl`), the Jupyter Server
extension and the JupyterLab / Notebook 7 front end.

They call the same public API as the command line; nothing else in nb2cwl imports them. A run
started from Jupyter is an `nb2cwl run` process of its own (runs.py), so a run that crashes
never takes the kernel or the server with it.
"""
