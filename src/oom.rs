//! An allocation failure inside the runtime becomes the program's MemoryError, as under CPython,
//! instead of Rust's default of aborting the process.
//!
//! The extension's global allocator is the system's, with a reserve: once a run has grown large
//! (`grow`, past `ARM_AT` controllers), a block of address space (`RESERVE`, never written: it
//! costs no resident memory) is held back. (Held from every run's start, it made small programs
//! fail under a tight address-space limit — a process's threads reserve most of it — where they
//! had run.) When an allocation fails, the block is given back, the allocation is tried again
//! (it then fits, unless it alone is larger than the reserve), and `failed` says so; the
//! evaluator checks it after every step and ends the run with a MemoryError (`lambda_o::eval`),
//! releasing its buffers. A run gives the reserve back when it ends (`run_ended`). A single
//! allocation larger than the reserve (doubling the vector of a long run's controllers) is asked for
//! fallibly (`grow`), with the same outcome. (Tested end to end, in a child process under an
//! address-space limit, by tests/test_out_of_memory.py: the flag is process-wide, and a unit
//! test setting it would fail the evaluator runs of tests running beside it.)
//!
//! Depends on nothing in this crate.
use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// Bytes of address space held back for unwinding a run whose allocation failed (64 MiB was
/// measured too little: the retried allocation still failed).
const RESERVE: usize = 128 << 20;

/// The number of a run's controllers from which the reserve is held back.
const ARM_AT: usize = 1 << 16;

static RESERVED: AtomicPtr<u8> = AtomicPtr::new(null_mut());
static FAILED: AtomicBool = AtomicBool::new(false);

fn reserve_layout() -> Layout {
    Layout::from_size_align(RESERVE, 4096).expect("a valid layout")
}

/// The system allocator, giving back the reserve and trying again when an allocation fails.
pub struct Guarded;

/// Give back the reserve, if it is held (whether it was).
fn take_reserve() -> bool {
    let r = RESERVED.swap(null_mut(), Ordering::SeqCst);
    if r.is_null() {
        return false;
    }
    // SAFETY: `r` was allocated by `System` with `reserve_layout()` in `arm`, and the swap above
    // made this the only owner of it.
    unsafe { System.dealloc(r, reserve_layout()) };
    true
}

/// An allocation failed: give back the reserve, if it is held, and note the failure; then the
/// allocation is tried again.
fn release_reserve() -> bool {
    let released = take_reserve();
    if released {
        FAILED.store(true, Ordering::SeqCst);
    }
    released
}

// SAFETY: every method forwards to `System` with the caller's arguments (the contract of each
// is the caller's); the retry after `release_reserve` is another such call.
unsafe impl GlobalAlloc for Guarded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if p.is_null() && release_reserve() {
            return System.alloc(layout);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if p.is_null() && release_reserve() {
            return System.alloc_zeroed(layout);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() && release_reserve() {
            return System.realloc(ptr, layout, new_size);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

/// Hold the reserve back, if it is not held already and the address space has room for it.
pub fn arm() {
    if !RESERVED.load(Ordering::Relaxed).is_null() {
        return;
    }
    // SAFETY: a non-zero-sized layout.
    let p = unsafe { System.alloc(reserve_layout()) };
    if p.is_null() {
        return;
    }
    if RESERVED.compare_exchange(null_mut(), p, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        // SAFETY: allocated just above with this layout, and not published.
        unsafe { System.dealloc(p, reserve_layout()) };
    }
}

/// Whether an allocation failed during this run (the reserve was used).
#[inline]
pub fn failed() -> bool {
    FAILED.load(Ordering::Relaxed)
}

/// Make room for one more element in `v`, a vector that grows with the length of a run (the
/// run's controllers): doubling, as `push` would; if that much cannot be had — an allocation
/// larger than the reserve — a failure is noted (`failed`) and it grows by an eighth, then by
/// one, so that the step in progress completes and the run ends with a MemoryError.
#[inline]
pub fn grow<T>(v: &mut Vec<T>) {
    if v.len() < v.capacity() {
        return;
    }
    if v.len() >= ARM_AT {
        arm();
    }
    let n = v.len().max(8);
    if v.try_reserve_exact(n).is_ok() {
        return;
    }
    FAILED.store(true, Ordering::SeqCst);
    if v.try_reserve_exact(n / 8).is_err() {
        v.reserve_exact(1);
    }
}

/// A run has ended: give the reserve back (the next large run holds it back again), so that no
/// address space stays held between runs, and forget a failure it had. Whether it had one.
pub fn run_ended() -> bool {
    take_reserve();
    FAILED.swap(false, Ordering::SeqCst)
}
