"""The `river-pa evaluate` job: progressive validation over River data sets and files.

`job` runs it (River's path, or one compiled pass for the linear learners: `compiled`, with
`kernels` choosing Numba's or the interpreter) and `cli` is its command line (`params` parses
the values, `progress` shows the run, `outputs` writes the report). `datasets` names the data
and opens it, `readers` and `libsvm` read the files (`files`: what they share), `targets`
infers the task and converts the labels, and `fastmetrics` replays River's metrics in compiled
code.

"""
