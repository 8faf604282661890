"""Proto builders and file writers for TensorBoard's dashboard plugins.

One module per dashboard, each a set of pure functions from validated numpy
values to `tensorboard.compat.proto` messages (or, for the projector, files):
`pr_curve`, `mesh`, `hparams`, `custom_scalars`, `audio`, `video`, `boxes`,
`figure`, `projector`. Metadata always comes from TensorBoard's own plugin
`metadata` modules and `plugin_data_pb2` protos, so what is written is what
the dashboard reads. The writer fronts (`torch_writer`, `writer`) validate
arguments and call these.
"""
