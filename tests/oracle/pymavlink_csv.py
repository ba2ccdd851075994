"""Print the values pymavlink gives every message of a DataFlash log, as mavlogdump's CSV output
writes them (`str()` of each value of `to_dict()`, scaled by the format character): one line per
message, its type name, a tab, then the values joined by commas. Used by
tests/suite/pymavlink_oracle.rs to check `bbcheck export --csv`."""

import sys

from pymavlink import DFReader


def main():
    reader = DFReader.DFReader_binary(sys.argv[1], zero_time_base=False)
    out = sys.stdout
    while True:
        message = reader.recv_msg()
        if message is None:
            break
        data = message.to_dict()
        columns = message.fmt.columns
        out.write(message.get_type() + "\t" + ",".join(str(data[c]) for c in columns) + "\n")


if __name__ == "__main__":
    main()
