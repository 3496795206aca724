//! Ordering tokens and the one-shot futures they are made of.

pub type FutId = usize;

/// The ordering token carried by a sequence variable S.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub r: FutId,
    pub w: FutId,
}

/// One-shot futures with waiter lists (the waiters are evaluator work items).
#[derive(Default)]
pub struct Futures {
    done: Vec<bool>,
    waiters: Vec<Vec<usize>>,
}

impl Futures {
    /// Forget every future, keeping the allocations.
    pub fn clear(&mut self) {
        self.done.clear();
        self.waiters.clear();
    }

    pub fn new_future(&mut self) -> FutId {
        self.done.push(false);
        self.waiters.push(Vec::new());
        self.done.len() - 1
    }

    pub fn new_resolved(&mut self) -> FutId {
        let f = self.new_future();
        self.done[f] = true;
        f
    }

    pub fn is_done(&self, f: FutId) -> bool {
        self.done[f]
    }

    /// Run `waiter` when `f` resolves (the caller checked it is not resolved yet).
    pub fn wait(&mut self, f: FutId, waiter: usize) {
        self.waiters[f].push(waiter);
    }

    /// Resolve `f`; returns the waiters to wake (empty if it was already resolved).
    pub fn resolve(&mut self, f: FutId) -> Vec<usize> {
        if self.done[f] {
            return Vec::new();
        }
        self.done[f] = true;
        std::mem::take(&mut self.waiters[f])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn futures_wake_their_waiters_once() {
        let mut f = Futures::default();
        let a = f.new_future();
        f.wait(a, 7);
        f.wait(a, 9);
        assert!(!f.is_done(a));
        assert_eq!(f.resolve(a), vec![7, 9]);
        assert!(f.is_done(a));
        assert!(f.resolve(a).is_empty());
        let b = f.new_resolved();
        assert!(f.is_done(b));
    }
}
