//! A small seeded generator (xorshift64*), so runs repeat exactly for a seed.

/// xorshift64* with a Box–Muller normal sampler.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator for `seed` (any value, zero included).
    pub fn new(seed: u64) -> Rng {
        // Mix the seed so nearby seeds give unrelated streams; the state must not be zero.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng { state: if z == 0 { 0x2545_F491_4F6C_DD1D } else { z } }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A uniform number in `(0, 1)`.
    pub fn unit(&mut self) -> f64 {
        // 53 random bits, shifted off zero.
        #[allow(clippy::cast_precision_loss)]
        let x = (self.next_u64() >> 11) as f64;
        (x + 0.5) / 9_007_199_254_740_992.0
    }

    /// A normal sample with mean 0 and standard deviation `sd`.
    pub fn normal(&mut self, sd: f64) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}
