//! The element encoding against its reference, the postcard crate: the same bytes for every
//! kind of serde value, each decoder reading the other's output, and on corrupt input the two
//! agreeing on what they accept (ours never panics, and refuses bytes left over).

use std::collections::BTreeMap;
use std::fmt::Debug;

use heron_streamlet::wire;
use heron_streamlet::{KeyValue, KeyedWindow, WindowInfo};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Unit;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Newtype(u32);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Pair(i16, String);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Shape {
    Empty,
    Circle(f64),
    Rect(u8, u16),
    Named { name: String, sides: Option<u64> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    id: u64,
    ok: bool,
    ratio: f32,
    initial: char,
    tags: Vec<String>,
    shape: Shape,
    counts: BTreeMap<String, i32>,
    nested: Option<Option<Unit>>,
    newtype: Newtype,
    pair: Pair,
    wide: (i128, u128),
    small: (i8, u8),
}

/// Encodes with both, checks the bytes are equal, and decodes each one's output with the other.
fn agree<T: Serialize + DeserializeOwned + PartialEq + Debug>(v: &T) {
    let theirs = postcard::to_stdvec(v).expect("postcard encodes");
    let mut ours = vec![0xaa];
    wire::write(v, &mut ours).expect("we encode");
    assert_eq!(&ours[1..], &theirs[..], "{v:?}");
    let back: T = wire::read(&theirs).expect("we read postcard's");
    assert_eq!(&back, v);
    let back: T = postcard::from_bytes(&ours[1..]).expect("postcard reads ours");
    assert_eq!(&back, v);
}

fn ints() -> Vec<i128> {
    let mut v = vec![0, 1, -1, 127, 128, -128, 300, -300];
    for bit in 0..127 {
        let p = 1i128 << bit;
        v.extend([p, p - 1, -p, -p + 1]);
    }
    v.extend([i128::MAX, i128::MIN]);
    v
}

#[test]
fn integers_of_every_width_at_every_length() {
    for i in ints() {
        macro_rules! each {
            ($($t:ty),*) => {$(
                #[allow(irrefutable_let_patterns)] // i128 from i128
                if let Ok(x) = <$t>::try_from(i) {
                    agree(&x);
                }
            )*};
        }
        each!(i8, i16, i32, i64, i128, u8, u16, u32, u64, u128, isize, usize);
    }
}

#[test]
fn floats_chars_text_and_bytes() {
    for f in [
        0.0f64,
        -0.0,
        1.5,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::INFINITY,
    ] {
        agree(&f);
        agree(&(f as f32));
    }
    for c in ['a', 'é', '日', '🦀', '\0'] {
        agree(&c);
    }
    let long = "x".repeat(300);
    for s in [
        "",
        "a",
        "word",
        "sixteen bytes ok",
        "seventeen bytes!!",
        "日本語",
        long.as_str(),
    ] {
        agree(&s.to_string());
        agree(&s.as_bytes().to_vec());
    }
}

#[test]
fn compounds_options_and_enums() {
    agree(&());
    agree(&Unit);
    agree(&Newtype(u32::MAX));
    agree(&Pair(-5, "p".into()));
    agree(&Some(3u8));
    agree(&None::<String>);
    agree(&Some(Some(false)));
    for shape in [
        Shape::Empty,
        Shape::Circle(2.5),
        Shape::Rect(1, 65535),
        Shape::Named {
            name: "hex".into(),
            sides: Some(6),
        },
    ] {
        agree(&shape);
    }
    let record = Record {
        id: 1 << 40,
        ok: true,
        ratio: 0.25,
        initial: 'ß',
        tags: vec!["a".into(), String::new(), "ccc".into()],
        shape: Shape::Named {
            name: "n".into(),
            sides: None,
        },
        counts: [("x".to_string(), -1), ("y".to_string(), i32::MIN)].into(),
        nested: Some(None),
        newtype: Newtype(7),
        pair: Pair(i16::MIN, "pair".into()),
        wide: (i128::MIN, u128::MAX),
        small: (-128, 255),
    };
    agree(&record);
    agree(&vec![record.clone(), record]);
    agree(&KeyValue::new(
        "word".to_string(),
        (1i64, 1_796_000_000_123_456_789i64),
    ));
    agree(&KeyValue::new(
        KeyedWindow {
            key: "k".to_string(),
            window: WindowInfo {
                start_ms: Some(-5),
                end_ms: None,
                count: 12,
            },
        },
        3.5f64,
    ));
}

#[test]
fn decoding_in_place_reuses_the_place_and_equals_a_fresh_decode() {
    let mut place = KeyValue::new(String::with_capacity(64), (0i64, 0i64));
    let ptr = place.key.as_ptr();
    for (w, n) in [("a", 1i64), ("longer word", -7), ("", i64::MIN)] {
        let v = KeyValue::new(w.to_string(), (n, n.wrapping_mul(3)));
        let mut bytes = Vec::new();
        wire::write(&v, &mut bytes).unwrap();
        wire::read_into(&bytes, &mut place).unwrap();
        assert_eq!(place, v);
        assert_eq!(place.key.as_ptr(), ptr, "the key's buffer is reused");
        assert_eq!(
            wire::read::<KeyValue<String, (i64, i64)>>(&bytes).unwrap(),
            v
        );
    }
}

/// Corrupt input: ours never panics; what either accepts whole, the other reads the same.
#[test]
fn corrupt_input_is_refused_as_postcard_refuses_it() {
    type Element = (
        KeyValue<String, (i64, i64)>,
        Option<bool>,
        Vec<u16>,
        Shape,
        char,
    );
    let good: Element = (
        KeyValue::new("word".into(), (1, 1_796_000_000_123_456_789)),
        Some(true),
        vec![1, 300, 65535],
        Shape::Rect(9, 999),
        'é',
    );
    let bytes = postcard::to_stdvec(&good).unwrap();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut same, mut refused) = (0, 0);
    for _ in 0..20_000 {
        let mut b = bytes.clone();
        match next() % 4 {
            0 => b.truncate((next() as usize) % b.len()),
            1 => {
                let at = (next() as usize) % b.len();
                b[at] = next() as u8;
            }
            2 => {
                for _ in 0..3 {
                    let at = (next() as usize) % b.len();
                    b[at] ^= 1 << (next() % 8);
                }
            }
            _ => b.push(next() as u8),
        }
        let ours = wire::read::<Element>(&b);
        let theirs = postcard::take_from_bytes::<Element>(&b);
        match (&ours, &theirs) {
            (Ok(o), Ok((t, rest))) => {
                assert!(rest.is_empty(), "we refuse bytes left over: {b:?}");
                assert_eq!(o, t, "{b:?}");
                same += 1;
            }
            (Err(_), Ok((_, rest))) => {
                assert!(
                    !rest.is_empty(),
                    "postcard reads {b:?} whole and we refuse it: {ours:?}"
                );
                refused += 1;
            }
            (Ok(_), Err(e)) => panic!("we read {b:?}, postcard refuses it: {e}"),
            (Err(_), Err(_)) => refused += 1,
        }
    }
    eprintln!("{same} corrupt inputs read as postcard reads them, {refused} refused");
    assert!(
        same > 100 && refused > 100,
        "{same} read, {refused} refused"
    );
}
