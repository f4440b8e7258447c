"""Member attributes (cohorts): the services, the set-up API and the pages."""
