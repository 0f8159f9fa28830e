"""On PYTHONPATH while a fit runs (models.traced_run): sitecustomize.py logs the files each process opens."""
