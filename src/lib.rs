//! heron-rs placeholder
