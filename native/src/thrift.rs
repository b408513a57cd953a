//! HBase Thrift2 replies whose answer is a `list<TResult>` (`getScannerResults`,
//! `getMultiple`), read from their bytes in Thrift's strict binary protocol: where a reply ends
//! (`reply_length`, so that a reader of a buffered socket knows when it has all of it) and its
//! rows and cells as flat vectors (`decode_results`), without an object per row or cell.
//!
//! The Python reference is thriftpy2's decoding of the shipped IDL
//! (`dedup_hbase/stores/hbase/results.py`: `Results.of`). `decode_results` takes only the
//! canonical form HBase writes (each known field once, of its declared type) and answers
//! `None` for anything else (an exception reply, a field twice, a field of another type, a
//! required field missing): the caller then decodes the bytes with the reference, so the
//! answer is the reference's whatever the bytes (tests/test_hbase_results.py).

const STOP: u8 = 0;
const BOOL: u8 = 2;
const BYTE: u8 = 3;
const DOUBLE: u8 = 4;
const I16: u8 = 6;
const I32: u8 = 8;
const I64: u8 = 10;
const STRING: u8 = 11;
const STRUCT: u8 = 12;
const MAP: u8 = 13;
const SET: u8 = 14;
const LIST: u8 = 15;
const REPLY: u8 = 2;
const VERSION_1: u32 = 0x8001_0000;
const MAX_DEPTH: usize = 64;

/// Malformed bytes: not a strict binary message.
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// `Err(None)`: the bytes end before the value does (more may come).
type Step<T> = Result<T, Option<Malformed>>;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Step<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(Some(Malformed("length overflows")))?;
        if end > self.buf.len() {
            return Err(None);
        }
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }
    fn u8(&mut self) -> Step<u8> {
        Ok(self.take(1)?[0])
    }
    fn i16(&mut self) -> Step<i16> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> Step<i32> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn size(&mut self) -> Step<usize> {
        let n = self.i32()?;
        usize::try_from(n).map_err(|_| Some(Malformed("negative size")))
    }
    fn binary(&mut self) -> Step<&'a [u8]> {
        let n = self.size()?;
        self.take(n)
    }
    /// A struct's next field header, (id, type); None at its end.
    fn field(&mut self) -> Step<Option<(i16, u8)>> {
        let kind = self.u8()?;
        if kind == STOP {
            return Ok(None);
        }
        Ok(Some((self.i16()?, kind)))
    }
    /// Skip one value of type `kind`.
    fn skip(&mut self, kind: u8, depth: usize) -> Step<()> {
        if depth > MAX_DEPTH {
            return Err(Some(Malformed("nested too deeply")));
        }
        match kind {
            BOOL | BYTE => self.take(1).map(|_| ()),
            I16 => self.take(2).map(|_| ()),
            I32 => self.take(4).map(|_| ()),
            DOUBLE | I64 => self.take(8).map(|_| ()),
            STRING => self.binary().map(|_| ()),
            STRUCT => {
                while let Some((_, field)) = self.field()? {
                    self.skip(field, depth + 1)?;
                }
                Ok(())
            }
            MAP => {
                let (k, v, n) = (self.u8()?, self.u8()?, self.size()?);
                for _ in 0..n {
                    self.skip(k, depth + 1)?;
                    self.skip(v, depth + 1)?;
                }
                Ok(())
            }
            SET | LIST => {
                let (e, n) = (self.u8()?, self.size()?);
                for _ in 0..n {
                    self.skip(e, depth + 1)?;
                }
                Ok(())
            }
            _ => Err(Some(Malformed("unknown type"))),
        }
    }
    /// The strict message header: (message type, its end).
    fn header(&mut self) -> Step<u8> {
        let word = self.i32()? as u32;
        if word & 0xffff_0000 != VERSION_1 {
            return Err(Some(Malformed("not a strict binary message")));
        }
        self.binary()?; // the method's name
        self.i32()?; // the sequence id
        Ok((word & 0xff) as u8)
    }
}

/// The length of the message at the start of `buf` (a strict binary header and one struct,
/// the reply's result); `Ok(None)` when `buf` ends before it does.
pub fn reply_length(buf: &[u8]) -> Result<Option<usize>, Malformed> {
    let mut r = Reader { buf, pos: 0 };
    match r.header().and_then(|_| r.skip(STRUCT, 0)) {
        Ok(()) => Ok(Some(r.pos)),
        Err(None) => Ok(None),
        Err(Some(m)) => Err(m),
    }
}

/// Rows and cells of a `list<TResult>` reply, flat: `rows[i]` the row key of result i (None
/// where the result has none: a row `getMultiple` did not find), `cell_rows[j]` the result
/// cell j belongs to (non-decreasing), `qualifiers[j]` and `values[j]` its qualifier and value.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Results<'a> {
    pub rows: Vec<Option<&'a [u8]>>,
    pub cell_rows: Vec<u32>,
    pub qualifiers: Vec<&'a [u8]>,
    pub values: Vec<&'a [u8]>,
}

/// A field id seen once: `Err` (not canonical) the second time.
fn once(seen: &mut u8, id: i16) -> Option<()> {
    let bit = 1u8 << id;
    if *seen & bit != 0 {
        return None;
    }
    *seen |= bit;
    Some(())
}

/// The TResult list of a whole reply message (`reply_length(buf)` bytes) in the canonical form
/// (the module's doc); `None` for any other message, malformed ones included.
pub fn decode_results(buf: &[u8]) -> Option<Results<'_>> {
    let mut r = Reader { buf, pos: 0 };
    if r.header().ok()? != REPLY {
        return None;
    }
    let mut out = Results::default();
    let mut answered = false;
    while let Some((id, field)) = r.field().ok()? {
        if id != 0 || field != LIST || answered {
            return None; // an exception the call declares, or not canonical: the reference's
        }
        answered = true;
        if r.u8().ok()? != STRUCT {
            return None;
        }
        let n = r.size().ok()?;
        for _ in 0..n {
            result(&mut r, &mut out)?;
        }
    }
    (answered && r.pos == buf.len()).then_some(out)
}

/// One TResult: 1 row, 2 columnValues, 3 stale, 4 partial; other ids skipped.
fn result<'a>(r: &mut Reader<'a>, out: &mut Results<'a>) -> Option<()> {
    let index = u32::try_from(out.rows.len()).ok()?;
    let (mut seen, mut row) = (0u8, None);
    while let Some((id, field)) = r.field().ok()? {
        match (id, field) {
            (1, STRING) => {
                once(&mut seen, 1)?;
                row = Some(r.binary().ok()?);
            }
            (2, LIST) => {
                once(&mut seen, 2)?;
                if r.u8().ok()? != STRUCT {
                    return None;
                }
                let n = r.size().ok()?;
                for _ in 0..n {
                    let (qualifier, value) = column_value(r)?;
                    out.cell_rows.push(index);
                    out.qualifiers.push(qualifier);
                    out.values.push(value);
                }
            }
            (3, BOOL) | (4, BOOL) => {
                once(&mut seen, id)?;
                r.take(1).ok()?;
            }
            (1..=4, _) => return None,
            _ => r.skip(field, 1).ok()?,
        }
    }
    out.rows.push(row);
    Some(())
}

/// One TColumnValue: 1 family, 2 qualifier, 3 value (required), 4 timestamp, 5 tags, 6 type;
/// other ids skipped. (qualifier, value).
fn column_value<'a>(r: &mut Reader<'a>) -> Option<(&'a [u8], &'a [u8])> {
    let (mut seen, mut qualifier, mut value) = (0u8, None, None);
    while let Some((id, field)) = r.field().ok()? {
        match (id, field) {
            (1, STRING) | (5, STRING) => {
                once(&mut seen, id)?;
                r.binary().ok()?;
            }
            (2, STRING) => {
                once(&mut seen, 2)?;
                qualifier = Some(r.binary().ok()?);
            }
            (3, STRING) => {
                once(&mut seen, 3)?;
                value = Some(r.binary().ok()?);
            }
            (4, I64) => {
                once(&mut seen, 4)?;
                r.take(8).ok()?;
            }
            (6, BYTE) => {
                once(&mut seen, 6)?;
                r.take(1).ok()?;
            }
            (1..=6, _) => return None,
            _ => r.skip(field, 2).ok()?,
        }
    }
    if seen & 0b10 == 0 {
        return None; // no family: required, the reference keeps None
    }
    Some((qualifier?, value?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(out: &mut Vec<u8>, id: i16, data: &[u8]) {
        out.push(STRING);
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&(data.len() as i32).to_be_bytes());
        out.extend_from_slice(data);
    }

    fn reply(rows: &[(&[u8], &[(&[u8], &[u8])])]) -> Vec<u8> {
        let mut out = (VERSION_1 | REPLY as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&4i32.to_be_bytes());
        out.extend_from_slice(b"scan");
        out.extend_from_slice(&7i32.to_be_bytes());
        out.extend_from_slice(&[LIST, 0, 0, STRUCT]);
        out.extend_from_slice(&(rows.len() as i32).to_be_bytes());
        for (row, cells) in rows {
            bin(&mut out, 1, row);
            out.extend_from_slice(&[LIST, 0, 2, STRUCT]);
            out.extend_from_slice(&(cells.len() as i32).to_be_bytes());
            for (q, v) in cells.iter() {
                bin(&mut out, 1, b"d");
                bin(&mut out, 2, q);
                bin(&mut out, 3, v);
                out.extend_from_slice(&[I64, 0, 4]);
                out.extend_from_slice(&5i64.to_be_bytes());
                out.push(STOP);
            }
            out.push(STOP);
        }
        out.push(STOP);
        out
    }

    #[test]
    fn a_reply_is_measured_and_decoded() {
        let bytes = reply(&[(b"r1", &[(b"q1", b"v1"), (b"q2", b"")]), (b"r2", &[])]);
        assert_eq!(reply_length(&bytes), Ok(Some(bytes.len())));
        for cut in 0..bytes.len() {
            assert_eq!(reply_length(&bytes[..cut]), Ok(None));
        }
        let got = decode_results(&bytes).unwrap();
        assert_eq!(got.rows, vec![Some(&b"r1"[..]), Some(&b"r2"[..])]);
        assert_eq!(got.cell_rows, vec![0, 0]);
        assert_eq!(got.qualifiers, vec![&b"q1"[..], &b"q2"[..]]);
        assert_eq!(got.values, vec![&b"v1"[..], &b""[..]]);
        assert_eq!(decode_results(&bytes[..bytes.len() - 1]), None);
    }

    #[test]
    fn malformed_headers_and_types_are_said() {
        assert_eq!(
            reply_length(&[0, 0, 0, 1, 0]),
            Err(Malformed("not a strict binary message"))
        );
        let mut bytes = reply(&[]);
        let at = bytes.len() - 9; // the result's field type
        bytes[at] = 99;
        assert_eq!(reply_length(&bytes), Err(Malformed("unknown type")));
    }
}
