"""Reports and plots written into the run directory after fit and test."""
