"""Reports and plots written into the run directory after test, by one callback
(``callback.ReportWriter``, configured with a list of reports; defaults per job in
``defaults``): the contract (``base``), running a model for a report (``outputs``), the run's
learning curves (``curves``), and one file per kind of report."""
