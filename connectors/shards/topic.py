"""The mix topic (`--mix-topic`, default `<events_topic>.mix`): each shard's model at the end of
each round, as the other shards read it.

Shard s of group G writes its contribution to round r as version r of the snapshot
`G.shard<s>` (the group's own: deployments on one events topic share the topic; chunked,
with a manifest: connectors/state/snapshots.py, so a model of any size fits the broker's
`max.message.bytes`), in the learner's term: a payload in the checkpoint format (signed with
`--checkpoint-key`, read by the restricted unpickler: no record of the topic runs code) holding
``{"model", "weight", "round", "shard", "shards"}``. A writer keeps its two newest versions
(older ones are tombstoned, the topic is compacted): a shard waits for round r only while every
other shard is at round r or r + 1, so no reader needs an older one. One consumer reads every
shard's snapshots (`MixTopic.poll`); a version whose payload does not verify, or holds another
round, shard, shard count or model class, is reported and skipped.

"""

from __future__ import annotations

from river_pa.connectors.kafka.partitions import TopicPartition
from river_pa.connectors.state import checkpoint, snapshots

__all__ = ["MixTopic"]


class MixTopic:
    """Shard `shard`'s view of the mix topic: its writer and a reader of every shard's
    contributions, on the group-less `consumer` (closed by `close`)."""

    def __init__(self, consumer, topic: str, group: str, shard: int, shards: int, on_invalid):
        self.consumer, self.topic, self.shard, self.shards = consumer, topic, shard, shards
        self.tp, self.names = TopicPartition(topic, 0), [f"{group}.shard{s}" for s in range(shards)]
        self.readers = [snapshots.Reader(consumer, topic, name, on_invalid)
                        for name in self.names]  # each assigns the consumer: one partition
        self.publisher: snapshots.Publisher | None = None

    def read_to_end(self, timeout_s: float, term: int) -> None:
        """Read what the topic holds now, then make this shard's writer in `term` (or above
        every term of its own found there: a state topic emptied since)."""
        snapshots.read_to_end(self.consumer, self.tp, self.poll, timeout_s)
        own = self.readers[self.shard]
        self.publisher = snapshots.Publisher(self.topic, self.names[self.shard],
                                             max(term, own.newest[0] + 1), 0, own.manifests())

    def poll(self, timeout_ms: int) -> None:
        """Take what one poll of the topic returns."""
        for record in self.consumer.poll(timeout_ms=timeout_ms).get(self.tp, ()):
            for reader in self.readers:
                reader.take(record)

    def send(self, send, contribution: dict, model, key: bytes | None) -> None:
        """Send this shard's `contribution` to round ``contribution["round"]`` with `send`
        (the caller flushes, or commits the transaction)."""
        publisher = self.publisher
        publisher.version = contribution["round"] - 1
        payload = checkpoint.dumps(contribution, model, {}, key, publisher.next_stamp())
        publisher.publish(send, payload)

    def contributions(self, rnd: int, meta: dict, key: bytes | None, model_class) -> dict:
        """{shard: contribution} of the shards whose contribution to round `rnd` is read and
        valid (this shard's own among them once read back)."""
        found = {}
        for s, reader in enumerate(self.readers):
            for manifest, payload in reader.candidates():
                if manifest["version"] != rnd:
                    continue
                why = _invalid(payload, manifest, meta, key, model_class,
                               {"round": rnd, "shard": s, "shards": self.shards})
                if isinstance(why, str):
                    reader.reject(manifest, why)
                    continue
                found[s] = why
                break
        return found

    def waiting(self, rnd: int) -> bool:
        """Whether another shard has sent its contribution to round `rnd` (it waits for this
        one: a quiet shard ends its round)."""
        return any(at[1] == rnd and version.found for s, reader in enumerate(self.readers)
                   if s != self.shard for at, version in reader.versions.items())

    def mixed(self, rnd: int) -> None:
        """Round `rnd` is mixed: its versions and older ones are dropped from the readers."""
        for reader in self.readers:
            done = [at for at in reader.versions if at[1] <= rnd]
            for at in done:
                del reader.versions[at]

    def close(self) -> None:
        self.consumer.close()


def _invalid(payload: bytes, manifest: dict, meta: dict, key, model_class, expected: dict):
    """The contribution in `payload`, or why it is not a valid one of `expected`."""
    stamp = {"term": manifest["term"], "version": manifest["version"]}
    try:
        _, state = checkpoint.loads(payload, meta, key, "its payload", stamp)
    except checkpoint.CheckpointError as exc:
        return str(exc)
    if not isinstance(state, dict) or not isinstance(state.get("model"), model_class):
        return f"its payload is not a contribution of a {model_class.__name__}"
    weight = state.get("weight")
    if type(weight) is not int or weight < 0:
        return f"its weight is not a count of events: {weight!r:.40}"
    for name, value in expected.items():
        if state.get(name) != value:
            return f"it is of {name} {state.get(name)!r:.40}, not {value}"
    return state
