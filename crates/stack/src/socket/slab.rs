//! A host's socket table of one protocol: slots reused through a free
//! list, each handed out with a generation, so a handle outlives its
//! socket safely — once the slot is reused, the old handle no longer
//! matches. TCP's and XTP's tables hold their own lookup maps beside it.

/// A slot's place and generation: what a protocol's handle wraps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotKey {
    index: u32,
    generation: u32,
}

/// Slots of `T`, at most `max` in use.
#[derive(Debug)]
pub struct Slab<T> {
    slots: Vec<Option<T>>,
    generations: Vec<u32>,
    free: Vec<usize>,
    max: usize,
}

impl<T> Slab<T> {
    pub fn new(max: usize) -> Self {
        Self {
            slots: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            max,
        }
    }

    /// Stores `value`: its slot index and key, `None` when `max` slots
    /// are in use.
    pub fn insert(&mut self, value: T) -> Option<(usize, SlotKey)> {
        let index = match self.free.pop() {
            Some(index) => index,
            None if self.slots.len() < self.max => {
                self.slots.push(None);
                self.generations.push(0);
                self.slots.len() - 1
            }
            None => return None,
        };
        self.slots[index] = Some(value);
        Some((index, self.key_of(index)))
    }

    /// The key of slot `index` as it is now.
    pub fn key_of(&self, index: usize) -> SlotKey {
        SlotKey {
            index: index as u32,
            generation: self.generations[index],
        }
    }

    /// The slot index of a live key.
    pub fn index(&self, key: SlotKey) -> Option<usize> {
        let index = key.index as usize;
        (self.generations.get(index) == Some(&key.generation)
            && self.slots.get(index).is_some_and(Option::is_some))
        .then_some(index)
    }

    pub fn get(&self, index: usize) -> Option<&T> {
        self.slots.get(index).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.slots.get_mut(index).and_then(Option::as_mut)
    }

    /// Frees slot `index`; its keys go stale.
    pub fn remove(&mut self, index: usize) -> Option<T> {
        let value = self.slots.get_mut(index)?.take()?;
        self.generations[index] = self.generations[index].wrapping_add(1);
        self.free.push(index);
        Some(value)
    }

    /// One past the highest slot index (slots below may be free).
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Indices of every slot in use.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|_| i))
    }

    /// Every value in use.
    pub fn values(&self) -> impl Iterator<Item = &T> + '_ {
        self.slots.iter().flatten()
    }

    /// Slots in use.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_slot_leaves_the_old_key_stale() {
        let mut slab = Slab::new(2);
        let (a, key_a) = slab.insert("a").unwrap();
        let (_, key_b) = slab.insert("b").unwrap();
        assert!(slab.insert("c").is_none(), "at most two");
        assert_eq!(slab.remove(a), Some("a"));
        assert_eq!(slab.index(key_a), None);
        let (again, key_c) = slab.insert("c").unwrap();
        assert_eq!(again, a);
        assert_ne!(key_c, key_a);
        assert_eq!(slab.index(key_a), None);
        assert_eq!(slab.index(key_c), Some(a));
        assert_eq!(slab.get(slab.index(key_b).unwrap()), Some(&"b"));
        assert_eq!(slab.len(), 2);
        assert_eq!(slab.values().count(), 2);
    }
}
