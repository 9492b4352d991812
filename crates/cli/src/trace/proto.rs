//! A minimal protobuf wire-format encoder (varints and length-delimited
//! fields), enough to write Perfetto traces without a protobuf dependency.
//!
//! Wire format (protobuf encoding spec): a field is `key = (number << 3) | wire_type`
//! as a varint, then the value: wire type 0 = varint, 2 = length-delimited
//! (varint length, then bytes). Signed `int32`/`int64` values are written as
//! their 64-bit two's complement (a negative int32 takes 10 bytes), unlike
//! `sint*` (zigzag), which Perfetto's sched protos do not use.

/// Appends `v` as a base-128 varint.
pub fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

const VARINT: u64 = 0;
const LEN: u64 = 2;

/// A message being encoded.
#[derive(Default)]
pub struct Msg {
    pub buf: Vec<u8>,
}

impl Msg {
    pub fn new() -> Msg {
        Msg::default()
    }

    fn key(&mut self, field: u32, wire: u64) {
        put_varint(&mut self.buf, (field as u64) << 3 | wire);
    }

    /// `uint32` / `uint64` / `bool` / enum field.
    pub fn uint(&mut self, field: u32, v: u64) -> &mut Msg {
        self.key(field, VARINT);
        put_varint(&mut self.buf, v);
        self
    }

    /// `int32` / `int64` field (two's complement, not zigzag).
    pub fn int(&mut self, field: u32, v: i64) -> &mut Msg {
        self.key(field, VARINT);
        put_varint(&mut self.buf, v as u64);
        self
    }

    /// `string` / `bytes` field.
    pub fn bytes(&mut self, field: u32, v: &[u8]) -> &mut Msg {
        self.key(field, LEN);
        put_varint(&mut self.buf, v.len() as u64);
        self.buf.extend_from_slice(v);
        self
    }

    pub fn string(&mut self, field: u32, v: &str) -> &mut Msg {
        self.bytes(field, v.as_bytes())
    }

    /// Embedded message field.
    pub fn msg(&mut self, field: u32, m: &Msg) -> &mut Msg {
        self.bytes(field, &m.buf)
    }

    /// Embedded message field built by `f`.
    pub fn with(&mut self, field: u32, f: impl FnOnce(&mut Msg)) -> &mut Msg {
        let mut m = Msg::new();
        f(&mut m);
        self.msg(field, &m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodings from the protobuf encoding spec ("Base 128 Varints", "Length-Delimited Records").
    #[test]
    fn varints_match_the_spec_examples() {
        let enc = |v: u64| {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            b
        };
        assert_eq!(enc(0), [0x00]);
        assert_eq!(enc(1), [0x01]);
        assert_eq!(enc(127), [0x7f]);
        assert_eq!(enc(128), [0x80, 0x01]);
        assert_eq!(enc(150), [0x96, 0x01]);
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(enc(u64::MAX), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    }

    #[test]
    fn fields_match_the_spec_examples() {
        // message Test1 { int32 a = 1; } with a = 150 → 08 96 01
        assert_eq!(Msg::new().uint(1, 150).buf, [0x08, 0x96, 0x01]);
        // message Test2 { string b = 2; } with b = "testing" → 12 07 74 65 73 74 69 6e 67
        assert_eq!(Msg::new().string(2, "testing").buf, b"\x12\x07testing");
        // message Test3 { Test1 c = 3; } → 1a 03 08 96 01
        assert_eq!(
            Msg::new()
                .with(3, |m| {
                    m.uint(1, 150);
                })
                .buf,
            [0x1a, 0x03, 0x08, 0x96, 0x01]
        );
        // int32 -1 is ten bytes of two's complement.
        assert_eq!(Msg::new().int(1, -1).buf, [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        // Field numbers above 15 take a two-byte key: field 491, wire type 2 → (491 << 3 | 2) = 3930 → da 1e.
        assert_eq!(Msg::new().bytes(491, &[]).buf, [0xda, 0x1e, 0x00]);
    }
}
