"""The write pipeline: every write is a plan, run by one engine into one sink.

- :mod:`.target`: :class:`~.target.WriteTarget`, where a write goes (a local path,
  an fsspec URL, an ``s3://`` object), resolved once, with its lock and its base.
- :mod:`.plan`: :class:`~.plan.WritePlan`, what a write becomes before anything is
  written (the new metadata, the parts to write with their chunk ids in placement
  order, and how to open the sink).  The xarray adapter makes them
  (``xarray/planner.py``).
- :mod:`.encode`: the encoders of a part's chunks, one Dask task per dask chunk,
  computed in batches of bounded memory.
- :mod:`.engine`: :func:`~.engine.execute`, a plan run on Dask (local threads or a
  distributed cluster): the chunks gathered into a ``ChunkSink``, or written by the
  tasks for a ``TaskSink``.
- :mod:`.sinks`: the sinks of this package and :func:`~.sinks.choose_sink`, the one
  place that decides which sink takes a write; ``compact``.
- :mod:`.progress`: the progress bar of a write.
- :mod:`.compat`: the private parts of dask the pipeline needs, and why.
"""
