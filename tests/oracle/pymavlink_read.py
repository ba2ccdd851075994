"""Read DataFlash logs with pymavlink's DFReader, message by message, and print one JSON line per
file: messages read, the count per type name, bytes skipped between messages, and bytes left after
the last one. Used by tests/pymavlink_oracle.rs as an independent reader."""

import json
import sys

from pymavlink import DFReader


def read(path):
    reader = DFReader.DFReader_binary(path, zero_time_base=False)
    counts = {}
    messages = 0
    skipped = 0
    end = 0
    while True:
        message = reader.recv_msg()
        if message is None:
            break
        start = reader.offset - message.fmt.len
        skipped += start - end
        end = reader.offset
        name = message.get_type()
        counts[name] = counts.get(name, 0) + 1
        messages += 1
    return {
        "path": path,
        "messages": messages,
        "counts": counts,
        "skipped": skipped,
        "trailing": reader.data_len - end,
    }


def main():
    for path in sys.argv[1:]:
        print(json.dumps(read(path)), flush=True)


if __name__ == "__main__":
    main()
