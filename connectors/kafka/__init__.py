"""The Kafka client boundary: what the daemon asks of a consumer, a producer and an admin
client (`protocols`), the errors it tells apart (`errors`), and the kafka-python adapter
(`client`, `admin`, `diagnostics`, `outputs`, `assignor`, `topics`) with its workarounds.
Nothing outside this package imports kafka-python."""
