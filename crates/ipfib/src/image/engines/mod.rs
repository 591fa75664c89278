//! The file form of every engine: each engine's scalars and arrays
//! written as sections, and read back borrowing the arrays in place, each
//! engine refused unless its structural check passes. The engines
//! themselves know nothing of files; this module reads and writes their
//! crate-visible parts.

mod auto;
mod planb;
mod poptrie;

use super::codec::{invalid, Answers, ImageError};

/// `engine` as loaded from offset `at`, once its structural check passes,
/// every answer below `answers` included (every engine's `load` ends
/// here: nothing unchecked is ever searched, and no answer indexes past
/// the list it names).
pub(crate) fn validated<E: crate::engine::Engine<A>, A: crate::addr::Addr>(
    at: u64,
    what: &str,
    engine: E,
    answers: Answers,
) -> Result<E, ImageError> {
    match engine.validate_below(answers.below) {
        Ok(()) => Ok(engine),
        Err(why) => Err(invalid(
            at,
            &format!("{what} (answers index {} {})", answers.below, answers.of),
            why,
        )),
    }
}
