"""Decode TensorBoard event files from the formats' specifications, independently of repoc's writer
(train/tensorboard.c): the TFRecord framing (uint64 length, masked CRC-32C of it, data, masked CRC-32C of
the data; little-endian) and the protocol buffer wire format of TensorFlow's Event (wall_time = 1 double,
step = 2 int64, file_version = 3 string, summary = 5) with Summary (value = 1) and Summary.Value (tag = 1,
simple_value = 2 float).

usage: tb_events.py FILE...   prints one JSON object per event: {"file", "wall_time", "step",
                              "file_version" or "values": {tag: value}}; exits 1 on a bad CRC or a record
                              that is cut off.
"""
import json
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, pos):
    value, shift = 0, 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(buf):
    """(number, wire type, value) of each field; value is an int, or bytes for types 1, 2 and 5"""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("wire type %d" % wire)
        yield number, wire, value


def event(data):
    out = {}
    for number, wire, value in fields(data):
        if number == 1 and wire == 1:
            out["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2 and wire == 0:
            out["step"] = value
        elif number == 3 and wire == 2:
            out["file_version"] = value.decode()
        elif number == 5 and wire == 2:
            values = out.setdefault("values", {})
            for vn, vw, v in fields(value):
                if vn != 1 or vw != 2:
                    continue
                tag, simple = None, None
                for n, w, x in fields(v):
                    if n == 1 and w == 2:
                        tag = x.decode()
                    elif n == 2 and w == 5:
                        simple = struct.unpack("<f", x)[0]
                values[tag] = simple
    return out


def records(path):
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0
    while pos < len(buf):
        if len(buf) - pos < 12:
            raise ValueError("%s: a record cut off at byte offset %d" % (path, pos))
        header = buf[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (crc,) = struct.unpack("<I", buf[pos + 8:pos + 12])
        if crc != masked(crc32c(header)):
            raise ValueError("%s: bad length CRC at byte offset %d" % (path, pos))
        data = buf[pos + 12:pos + 12 + length]
        if len(data) != length or len(buf) < pos + 16 + length:
            raise ValueError("%s: a record cut off at byte offset %d" % (path, pos))
        (crc,) = struct.unpack("<I", buf[pos + 12 + length:pos + 16 + length])
        if crc != masked(crc32c(data)):
            raise ValueError("%s: bad data CRC at byte offset %d" % (path, pos))
        yield data
        pos += 16 + length


def main():
    try:
        for path in sys.argv[1:]:
            for data in records(path):
                e = event(data)
                e["file"] = path
                print(json.dumps(e, sort_keys=True))
    except ValueError as err:
        print("tb_events.py: %s" % err, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
