"""Read MCAP files with the official `mcap` reader and print one JSON line per file: the message
count, schema name and encoding of each topic, and the messages (log time, decoded JSON) of the
topics named after `--topics`.

usage: mcap_read.py FILE... [--topics TOPIC,...]
"""
import json
import sys

from mcap.reader import make_reader

args = sys.argv[1:]
topics = set()
if "--topics" in args:
    i = args.index("--topics")
    topics = set(args[i + 1].split(","))
    args = args[:i] + args[i + 2:]

for path in args:
    with open(path, "rb") as f:
        reader = make_reader(f)
        counts, schemas, messages = {}, {}, {}
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            schemas[channel.topic] = [schema.name, schema.encoding, channel.message_encoding,
                                      json.loads(schema.data)]
            if channel.topic in topics:
                messages.setdefault(channel.topic, []).append(
                    [message.log_time, json.loads(message.data)])
    print(json.dumps({"path": path, "counts": counts, "schemas": schemas, "messages": messages}))
