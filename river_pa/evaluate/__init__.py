"""The `river-pa evaluate` job: progressive validation over River data sets and files.

`job` runs it (the River path, or one compiled pass for the linear learners), `datasets` and
`libsvm` read the data, `fastmetrics` replays River's metrics in compiled code.

"""
