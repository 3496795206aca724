//! The reordering class of an external call and what a controller waits for because of it.

/// Reordering class of an external call (PopPy §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    Unordered,
    Readonly,
    Sequential,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Unordered => "unordered",
            Class::Readonly => "readonly",
            Class::Sequential => "sequential",
        }
    }

    /// Whether `self` orders more than `other` (unordered < readonly < sequential).
    pub fn stricter_than(self, other: Class) -> bool {
        let rank = |c: Class| match c {
            Class::Unordered => 0,
            Class::Readonly => 1,
            Class::Sequential => 2,
        };
        rank(self) > rank(other)
    }
}

/// What a controller waits for, by class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub dispatch_needs_r: bool,
    pub dispatch_needs_w: bool,
    /// F_R' needs the call to have completed successfully (otherwise it is F_R forwarded).
    pub r_out_needs_done: bool,
    /// F_W' needs the call to have completed successfully (otherwise it is F_W forwarded).
    pub w_out_needs_done: bool,
}

impl Policy {
    pub fn of(class: Class) -> Policy {
        match class {
            Class::Unordered => Policy {
                dispatch_needs_r: false,
                dispatch_needs_w: false,
                r_out_needs_done: false,
                w_out_needs_done: true,
            },
            Class::Readonly => Policy {
                dispatch_needs_r: true,
                dispatch_needs_w: false,
                r_out_needs_done: false,
                w_out_needs_done: true,
            },
            Class::Sequential => Policy {
                dispatch_needs_r: true,
                dispatch_needs_w: true,
                r_out_needs_done: true,
                w_out_needs_done: true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_follow_popppy_6_2() {
        let s = Policy::of(Class::Sequential);
        assert!(s.dispatch_needs_r && s.dispatch_needs_w);
        let r = Policy::of(Class::Readonly);
        assert!(r.dispatch_needs_r && !r.dispatch_needs_w && !r.r_out_needs_done);
        let u = Policy::of(Class::Unordered);
        assert!(!u.dispatch_needs_r && !u.dispatch_needs_w && !u.r_out_needs_done);
        // Every call may raise: a sequential call (F_W) waits for an unordered one to succeed.
        assert!(u.w_out_needs_done);
    }
}
