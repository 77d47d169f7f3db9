"""The write pipeline: every write is a plan, run by one engine into one sink.

- :mod:`.plan`: :class:`~.plan.WritePlan`, what a dataset, a target and a mode become
  before anything is written (the new metadata, the parts to write with their chunk
  ids in placement order, and how to open the sink).  The xarray adapter makes them
  (``to_hurray``: a new file; ``xarray/update.py``: a write into a file).
- :mod:`.encode`: the encoders of a part's chunks, one Dask task per dask chunk,
  computed in batches of bounded memory.
- :mod:`.engine`: :func:`~.engine.run`, a plan run on Dask (local threads or a
  distributed cluster): the chunks gathered into the sink, or written by the
  tasks for a sink that says how (``ChunkSink.runs_in_tasks``).
- :mod:`.sinks`: which sink takes a write (a new file, a new object, an in-place
  commit, a staged rewrite, a multipart commit of an object, a staged upload), and
  ``compact``.
- :mod:`.s3`: the multipart commit of an update of an ``s3://`` object.
- :mod:`.multipart`: the plan and the sink of a new ``s3://`` object, whose parts
  the tasks that encode them upload.
- :mod:`.progress`: the progress bar of a write.
- :mod:`.compat`: the private parts of dask the pipeline needs, and why.
"""
