//! The self-describing frame around every stored state file, so that a truncated, extended
//! or damaged file is detected when it is read back instead of being parsed as valid state.
//!
//! All integers are big-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `HCKP` (`48 43 4b 50`) |
//! | 4 | 2 | format version, [`VERSION`] (1) |
//! | 6 | 2 | reserved, zero |
//! | 8 | 8 | payload length `P` |
//! | 16 | 4 | CRC-32 (IEEE, as zlib's `crc32`) of bytes 0..16 followed by the payload |
//! | 20 | P | payload |
//!
//! A file is valid only if it is exactly `20 + P` bytes long and every field checks.

use std::fmt;

/// The first four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"HCKP";
/// The format version this build writes and reads.
pub const VERSION: u16 = 1;
/// The frame's header length; the payload follows it.
pub const HEADER_LEN: usize = 20;

/// Why bytes are not a valid frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than the header.
    ShortHeader(usize),
    /// The magic bytes are not [`MAGIC`]: not a state file of ours.
    BadMagic([u8; 4]),
    /// A format version this build does not read.
    UnknownVersion(u16),
    /// The reserved field is not zero.
    Reserved(u16),
    /// The header's payload length does not match the bytes present (truncated or extended).
    Length {
        /// The payload length the header announces.
        announced: u64,
        /// The payload bytes present.
        present: usize,
    },
    /// The checksum does not match: some byte changed.
    Checksum {
        /// The stored checksum.
        stored: u32,
        /// The checksum of what is there.
        computed: u32,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::ShortHeader(n) => {
                write!(f, "{n} bytes is shorter than the {HEADER_LEN}-byte header")
            }
            FrameError::BadMagic(m) => write!(f, "bad magic {m:02x?} (not a heron-rs state file)"),
            FrameError::UnknownVersion(v) => write!(f, "unknown format version {v}"),
            FrameError::Reserved(v) => write!(f, "reserved header field is {v}, not 0"),
            FrameError::Length { announced, present } => write!(
                f,
                "header announces {announced} payload bytes but {present} are present"
            ),
            FrameError::Checksum { stored, computed } => write!(
                f,
                "checksum mismatch (stored {stored:08x}, computed {computed:08x})"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// Frames `payload`.
///
/// ```
/// use heron_ckptmgr::frame;
/// let file = frame::encode(b"state");
/// assert_eq!(&file[..4], b"HCKP");
/// assert_eq!(frame::decode(&file).unwrap(), b"state");
/// assert!(frame::decode(&file[..file.len() - 1]).is_err());
/// ```
pub fn encode(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    let crc = checksum(&out, payload);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a frame, after checking every header field, the length and the checksum.
pub fn decode(bytes: &[u8]) -> Result<&[u8], FrameError> {
    if bytes.len() < HEADER_LEN {
        return Err(FrameError::ShortHeader(bytes.len()));
    }
    let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
    if magic != MAGIC {
        return Err(FrameError::BadMagic(magic));
    }
    let version = u16::from_be_bytes([bytes[4], bytes[5]]);
    if version != VERSION {
        return Err(FrameError::UnknownVersion(version));
    }
    let reserved = u16::from_be_bytes([bytes[6], bytes[7]]);
    if reserved != 0 {
        return Err(FrameError::Reserved(reserved));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&bytes[8..16]);
    let announced = u64::from_be_bytes(len);
    let payload = &bytes[HEADER_LEN..];
    if announced != payload.len() as u64 {
        return Err(FrameError::Length {
            announced,
            present: payload.len(),
        });
    }
    let stored = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let computed = checksum(&bytes[..16], payload);
    if stored != computed {
        return Err(FrameError::Checksum { stored, computed });
    }
    Ok(payload)
}

fn checksum(header: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(payload);
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..300u32).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn round_trips_empty_and_non_empty_payloads() {
        for payload in [Vec::new(), vec![0u8], sample()] {
            let f = encode(&payload);
            assert_eq!(f.len(), HEADER_LEN + payload.len());
            assert_eq!(decode(&f).unwrap(), &payload[..]);
        }
    }

    #[test]
    fn the_header_is_as_documented() {
        let f = encode(b"abc");
        assert_eq!(&f[0..4], b"HCKP");
        assert_eq!(&f[4..8], &[0, 1, 0, 0]);
        assert_eq!(&f[8..16], &3u64.to_be_bytes());
        let mut h = crc32fast::Hasher::new();
        h.update(&f[..16]);
        h.update(b"abc");
        assert_eq!(&f[16..20], &h.finalize().to_be_bytes());
        assert_eq!(&f[20..], b"abc");
    }

    #[test]
    fn every_truncation_is_detected() {
        for payload in [Vec::new(), sample()] {
            let f = encode(&payload);
            for len in 0..f.len() {
                assert!(decode(&f[..len]).is_err(), "truncated to {len} bytes");
            }
        }
    }

    #[test]
    fn trailing_bytes_are_detected() {
        let mut f = encode(&sample());
        f.push(0);
        assert!(matches!(decode(&f), Err(FrameError::Length { .. })));
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let f = encode(&sample());
        for byte in 0..f.len() {
            for bit in 0..8 {
                let mut g = f.clone();
                g[byte] ^= 1 << bit;
                assert!(decode(&g).is_err(), "flip of bit {bit} of byte {byte}");
            }
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let f = encode(b"xyz");
        let mut g = f.clone();
        g[0] = b'X';
        assert!(matches!(decode(&g), Err(FrameError::BadMagic(_))));
        let mut g = f.clone();
        g[5] = 9;
        assert_eq!(decode(&g), Err(FrameError::UnknownVersion(9)));
        let mut g = f.clone();
        g[22] ^= 0x40;
        let e = decode(&g).unwrap_err();
        assert!(e.to_string().contains("checksum mismatch"), "{e}");
        assert_eq!(decode(b"HCKP"), Err(FrameError::ShortHeader(4)));
    }
}
