//! Definite assignment: lowering tracks the set of locals surely bound at each point, so that
//! a load that may hit an unbound local is checked and raises UnboundLocalError exactly where
//! CPython would.
use crate::bezoar::ir::VarName;
use std::collections::BTreeSet;

/// The set of variables definitely assigned at a program point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DefinedSet(pub BTreeSet<VarName>);

impl DefinedSet {
    pub fn contains(&self, x: &VarName) -> bool {
        self.0.contains(x)
    }
    pub fn insert(&mut self, x: &VarName) {
        self.0.insert(x.clone());
    }
    pub fn remove(&mut self, x: &VarName) {
        self.0.remove(x);
    }
    /// After an `if`: assigned on both paths.
    pub fn meet(&self, other: &DefinedSet) -> DefinedSet {
        DefinedSet(self.0.intersection(&other.0).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defined_meet_is_intersection() {
        let mut a = DefinedSet::default();
        let (x, y) = (VarName::local("x"), VarName::local("y"));
        a.insert(&x);
        a.insert(&y);
        let mut b = DefinedSet::default();
        b.insert(&y);
        assert!(a.meet(&b).contains(&y));
        assert!(!a.meet(&b).contains(&x));
    }
}
