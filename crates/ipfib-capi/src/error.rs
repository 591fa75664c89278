//! Status codes, the thread-local error message, and [`guard`], the wrapper
//! every entry point runs its body in so that no panic unwinds into C.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a call returned. `IPFIB_STATUS_OK` is 0; every other value is an error,
/// and `ipfib_last_error()` then says what went wrong.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpfibStatus {
    /// Success (a lookup that finds no route is a success too: its route
    /// index is `IPFIB_NO_ROUTE`).
    Ok = 0,
    /// A required pointer argument was NULL.
    NullPointer = 1,
    /// An argument was invalid: text that is not UTF-8 or not a prefix or
    /// address, an unknown format name or flag, an unknown family, a count
    /// whose byte size overflows, a misaligned array.
    InvalidArgument = 2,
    /// A route index at or beyond the family's route count.
    OutOfRange = 3,
    /// The file could not be opened or read.
    Io = 4,
    /// The file's content could not be loaded: a bad line in a text table,
    /// an unrecognised format, a damaged compiled table file.
    Parse = 5,
    /// The table could not be built (e.g. more distinct values than a
    /// table holds, an engine build failure).
    Build = 6,
    /// An internal error (a Rust panic, caught at the boundary). The
    /// objects the call was given stay valid, but a builder the call was
    /// adding to may hold a partial change.
    Internal = 7,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// An error to hand back: the status and its message.
pub struct Error {
    pub status: IpfibStatus,
    pub message: String,
}

impl Error {
    pub fn new(status: IpfibStatus, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
        }
    }

    pub fn null(what: &str) -> Self {
        Error::new(IpfibStatus::NullPointer, format!("{what} is NULL"))
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(IpfibStatus::InvalidArgument, message)
    }
}

/// Store `message` as this thread's last error (interior NULs, which a C
/// string cannot hold, become spaces).
pub fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // `try_with`: during thread teardown the thread-local may be gone; a
    // panic there would cross the C boundary. The message is dropped.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = text);
}

/// This thread's last error message, NUL-terminated; empty if none.
pub fn last_error_ptr() -> *const c_char {
    // The CString lives in the thread-local until the next error on this
    // thread replaces it (the contract the header states).
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// Run an entry point's body: its error, or a panic, becomes a status
/// and this thread's last error; success is `IPFIB_OK`.
#[inline]
pub fn guard(call: &str, body: impl FnOnce() -> Result<(), Error>) -> IpfibStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => IpfibStatus::Ok,
        Ok(Err(e)) => {
            set_last_error(&format!("{call}: {}", e.message));
            e.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("{call}: internal error (panic): {what}"));
            IpfibStatus::Internal
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: last_error_ptr points at this thread's CString, alive
        // until the next set_last_error on this thread.
        unsafe { CStr::from_ptr(last_error_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_internal_with_its_message() {
        let s = guard("ipfib_test", || panic!("boom {}", 42));
        assert_eq!(s, IpfibStatus::Internal);
        assert_eq!(last(), "ipfib_test: internal error (panic): boom 42");
    }

    #[test]
    fn an_error_sets_the_message_and_success_keeps_it() {
        assert_eq!(
            guard("ipfib_x", || Err(Error::null("table"))),
            IpfibStatus::NullPointer
        );
        assert_eq!(last(), "ipfib_x: table is NULL");
        assert_eq!(guard("ipfib_y", || Ok(())), IpfibStatus::Ok);
        assert_eq!(last(), "ipfib_x: table is NULL");
        set_last_error("a\0b");
        assert_eq!(last(), "a b");
    }
}
