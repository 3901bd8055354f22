//! The per-topology secret: 32 random bytes made at submit, kept in a file only the
//! topology's owner can read (mode 0600 in a 0700 directory), read by every process of the
//! topology and by the CLI.

use crate::AuthError;
use hmac::{KeyInit, Mac};
use std::fmt;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// Bytes in a secret.
pub const SECRET_LEN: usize = 32;

/// What the controller token is the MAC of (so the token, which travels in HTTP headers,
/// is not the secret the links are proven with).
const TOKEN_LABEL: &[u8] = b"heron-rs controller token v1";

/// A topology's secret. `Debug` does not print it.
///
/// ```
/// use heron_auth::Secret;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("auth").join("secret");
/// let made = Secret::create(&path).unwrap();
/// let read = Secret::load(&path).unwrap();
/// assert_eq!(made.bearer_token(), read.bearer_token());
/// assert!(read.check_bearer(Some(&format!("Bearer {}", made.bearer_token()))));
/// assert!(!read.check_bearer(None));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret([u8; SECRET_LEN]);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A new random secret (from the thread's cryptographically secure generator, seeded by
    /// the operating system).
    pub fn generate() -> Secret {
        Secret(rand::random())
    }

    /// A secret with the given bytes (tests, and files written by another tool).
    pub fn from_bytes(bytes: [u8; SECRET_LEN]) -> Secret {
        Secret(bytes)
    }

    /// Parses the file format: 64 hex digits, surrounding whitespace ignored.
    pub fn from_hex(text: &str) -> Result<Secret, AuthError> {
        let text = text.trim();
        if text.len() != SECRET_LEN * 2 {
            return Err(AuthError::BadSecret(format!(
                "expected {} hex digits, found {} characters",
                SECRET_LEN * 2,
                text.len()
            )));
        }
        let mut out = [0u8; SECRET_LEN];
        for (i, pair) in text.as_bytes().chunks(2).enumerate() {
            let digit = |c: u8| {
                (c as char).to_digit(16).ok_or_else(|| {
                    AuthError::BadSecret(format!("{:?} is not a hex digit", c as char))
                })
            };
            out[i] = (digit(pair[0])? << 4 | digit(pair[1])?) as u8;
        }
        Ok(Secret(out))
    }

    /// The file format: 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Makes a new secret and writes it to `path` (creating the parent directory with mode
    /// 0700; the file gets mode 0600 and replaces any old one atomically).
    pub fn create(path: &Path) -> Result<Secret, AuthError> {
        let secret = Secret::generate();
        secret.write(path)?;
        Ok(secret)
    }

    /// Writes this secret to `path` as [`Secret::create`] does.
    pub fn write(&self, path: &Path) -> Result<(), AuthError> {
        write_private(path, format!("{}\n", self.to_hex()).as_bytes())
    }

    /// Reads a secret file, refusing one that group or others may read or write.
    pub fn load(path: &Path) -> Result<Secret, AuthError> {
        let bytes = read_private(path)?;
        let text = String::from_utf8_lossy(&bytes);
        Secret::from_hex(&text)
            .map_err(|e| AuthError::BadSecret(format!("{}: {e}", path.display())))
    }

    /// The controller's bearer token: hex of HMAC-SHA256(secret, a fixed label).
    pub fn bearer_token(&self) -> String {
        hex(&self.mac(&[TOKEN_LABEL]))
    }

    /// `true` when an `Authorization` header value is `Bearer <this secret's token>`
    /// (compared in constant time).
    pub fn check_bearer(&self, header: Option<&str>) -> bool {
        let Some(token) = header.and_then(|h| h.trim().strip_prefix("Bearer ")) else {
            return false;
        };
        let expected = self.bearer_token();
        let (a, b) = (token.trim().as_bytes(), expected.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// HMAC-SHA256 over the concatenated parts.
    pub(crate) fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        self.hmac(parts).finalize().into_bytes().into()
    }

    /// `true` when `tag` is HMAC-SHA256 over the parts (constant time).
    pub(crate) fn verify(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        self.hmac(parts).verify_slice(tag).is_ok()
    }

    fn hmac(&self, parts: &[&[u8]]) -> HmacSha256 {
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        for p in parts {
            mac.update(p);
        }
        mac
    }
}

/// Writes `bytes` to `path` readable by its owner only: the parent directory is created
/// with mode 0700, the file with 0600, and it replaces any old one atomically.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), AuthError> {
    let io = |what: &str| {
        let what = format!("{what} {}", path.display());
        move |e| AuthError::Io(what, e)
    };
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io("creating the directory of"))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(io("restricting the directory of"))?;
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("secret")
    ));
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io("writing"))?;
    file.write_all(bytes).map_err(io("writing"))?;
    file.sync_all().map_err(io("writing"))?;
    std::fs::rename(&tmp, path).map_err(io("writing"))
}

/// Reads a file written by [`write_private`], refusing one that group or others may read or
/// write.
pub(crate) fn read_private(path: &Path) -> Result<Vec<u8>, AuthError> {
    let io = |e| AuthError::Io(format!("reading {}", path.display()), e);
    let meta = std::fs::metadata(path).map_err(io)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(AuthError::BadSecret(format!(
            "{} has mode {mode:04o}; a topology secret must be readable by its owner only \
             (chmod 600)",
            path.display()
        )));
    }
    std::fs::read(path).map_err(io)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_bad_text_is_named() {
        let s = Secret::generate();
        assert_eq!(Secret::from_hex(&format!(" {}\n", s.to_hex())).unwrap(), s);
        let short = Secret::from_hex("abcd").unwrap_err().to_string();
        assert!(short.contains("64 hex digits"), "{short}");
        let bad = Secret::from_hex(&"zz".repeat(32)).unwrap_err().to_string();
        assert!(bad.contains("'z'"), "{bad}");
        assert_ne!(Secret::generate(), Secret::generate());
    }

    #[test]
    fn the_file_is_private_and_an_open_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a").join("secret");
        let s = Secret::create(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(Secret::load(&path).unwrap(), s);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Secret::load(&path).unwrap_err().to_string();
        assert!(e.contains("0644") && e.contains("chmod 600"), "{e}");
        let missing = Secret::load(&dir.path().join("none"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("reading"), "{missing}");
    }

    #[test]
    fn bearer_tokens_are_checked_exactly() {
        let s = Secret::from_bytes([7; 32]);
        let t = s.bearer_token();
        assert_eq!(t.len(), 64);
        assert_ne!(t, s.to_hex(), "the token is not the secret");
        assert!(s.check_bearer(Some(&format!("Bearer {t}"))));
        assert!(!s.check_bearer(Some(&t)));
        assert!(!s.check_bearer(Some("Bearer ")));
        assert!(!s.check_bearer(Some(&format!("Bearer {}", &t[..63]))));
        assert!(!Secret::from_bytes([8; 32]).check_bearer(Some(&format!("Bearer {t}"))));
    }
}
