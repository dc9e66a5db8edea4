//! First-order (lumped) thermal models of a hob with a pan and its contents, and an oven with a
//! product in it.
//!
//! Each body has a heat capacity `C` (J/K) and exchanges heat with its neighbours through
//! conductances `G` (W/K): `C·dT/dt = P_in + Σ G·(T_other − T)`. The solver is explicit Euler on
//! the simulator's 100 ms tick, far below the fastest time constant (a few seconds), so it is
//! stable and cheap. Water clamps at its boiling point and the surplus energy evaporates water;
//! the product core clamps near 99 °C while its moisture boils off.

/// Ambient kitchen temperature (°C).
pub const AMBIENT_C: f64 = 22.0;

const WATER_C_PER_KG: f64 = 4186.0;
const OIL_C_PER_KG: f64 = 2000.0;
const FOOD_C_PER_KG: f64 = 3200.0;
const LATENT_J_PER_KG: f64 = 2.26e6;
const CORE_MOISTURE_CLAMP_C: f64 = 99.0;

/// What the pan holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contents {
    /// Water or a water-based liquid (clamps at the boiling point).
    Water,
    /// Frying oil.
    Oil,
    /// A thin layer of food in a hot pan.
    Food,
}

/// A thermal body the sensors can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// The pan surface.
    Pan,
    /// The pan's contents (water, oil or food).
    Contents,
    /// The oven air.
    OvenAir,
    /// The product core (probe).
    Core,
}

/// Device constants (from the capabilities' `x-sim` block, with defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlantSpec {
    /// Hob heater maximum (W).
    pub hob_power_w: f64,
    /// Oven element maximum (W).
    pub oven_power_w: f64,
    /// Pan heat capacity (J/K).
    pub pan_c: f64,
    /// Altitude (m); lowers the boiling point by altitude/300 °C.
    pub altitude_m: f64,
}

impl Default for PlantSpec {
    fn default() -> PlantSpec {
        PlantSpec { hob_power_w: 2000.0, oven_power_w: 2400.0, pan_c: 1000.0, altitude_m: 0.0 }
    }
}

/// The thermal state.
#[derive(Clone, Debug)]
pub struct Plant {
    /// Constants.
    pub spec: PlantSpec,
    /// Pan surface (°C).
    pub pan: f64,
    /// Contents (°C).
    pub contents: f64,
    /// What the contents are.
    pub kind: Contents,
    /// Contents mass (kg).
    pub mass_kg: f64,
    /// Lid on the pan.
    pub lid: bool,
    /// The product is in the pan (a probe in a pot of soup reads the soup): its core follows
    /// the contents. Otherwise it sits in the oven and is heated by the oven air.
    pub core_in_contents: bool,
    /// Oven air (°C).
    pub oven: f64,
    /// Product core (°C).
    pub core: f64,
    /// Hob power applied in the last step (W).
    pub hob_w: f64,
    /// Oven power applied in the last step (W).
    pub oven_w: f64,
    /// Energy delivered by the heaters (J).
    pub energy_j: f64,
}

impl Plant {
    /// Everything at ambient, 1.5 kg of water in a lidded pan.
    pub fn new(spec: PlantSpec) -> Plant {
        Plant {
            spec,
            pan: AMBIENT_C,
            contents: AMBIENT_C,
            kind: Contents::Water,
            mass_kg: 1.5,
            lid: true,
            core_in_contents: false,
            oven: AMBIENT_C,
            core: AMBIENT_C,
            hob_w: 0.0,
            oven_w: 0.0,
            energy_j: 0.0,
        }
    }

    /// The boiling point of water at the device's altitude.
    pub fn boiling_point(&self) -> f64 {
        100.0 - self.spec.altitude_m / 300.0
    }

    /// Changes what the pan holds (keeping its temperature), with a typical mass.
    pub fn fill(&mut self, kind: Contents) {
        if self.kind != kind {
            self.kind = kind;
            self.mass_kg = match kind {
                Contents::Water => 1.5,
                Contents::Oil => 1.4,
                Contents::Food => 0.4,
            };
        }
    }

    /// Heat capacity of the contents (J/K).
    pub fn contents_c(&self) -> f64 {
        let per_kg = match self.kind {
            Contents::Water => WATER_C_PER_KG,
            Contents::Oil => OIL_C_PER_KG,
            Contents::Food => FOOD_C_PER_KG,
        };
        (self.mass_kg.max(0.02)) * per_kg
    }

    /// Pan ↔ contents conductance (W/K).
    pub fn pan_to_contents_g(&self) -> f64 {
        match self.kind {
            Contents::Water => 120.0,
            Contents::Oil => 60.0,
            Contents::Food => 25.0,
        }
    }

    fn contents_loss_g(&self) -> f64 {
        match (self.kind, self.lid) {
            (Contents::Water, true) => 2.5,
            (Contents::Water, false) => 6.0,
            (Contents::Oil, _) => 5.0,
            (Contents::Food, _) => 2.0,
        }
    }

    /// The pan-over-contents temperature difference that carries the contents' steady loss at
    /// `temp` (the controller subtracts it before judging stored heat).
    pub fn steady_pan_offset(&self, temp: f64) -> f64 {
        self.contents_loss_g() * (temp - AMBIENT_C) / self.pan_to_contents_g()
    }

    /// Steady heat loss of the body at `temp` (W), for the controller's feed-forward.
    pub fn loss_at(&self, body: Body, temp: f64) -> f64 {
        let over = temp - AMBIENT_C;
        match body {
            Body::Pan => 3.0 * over,
            Body::Contents => (3.0 + self.contents_loss_g()) * over,
            Body::OvenAir => (7.0 + 1.0) * over,
            Body::Core => 0.0,
        }
    }

    /// The true temperature of `body`.
    pub fn temp(&self, body: Body) -> f64 {
        match body {
            Body::Pan => self.pan,
            Body::Contents => self.contents,
            Body::OvenAir => self.oven,
            Body::Core => self.core,
        }
    }

    /// Advances `dt` seconds with the given heater powers (W; clamped to the heater limits).
    pub fn step(&mut self, dt: f64, hob_w: f64, oven_w: f64) {
        let hob = hob_w.clamp(0.0, self.spec.hob_power_w);
        let oven_p = oven_w.clamp(0.0, self.spec.oven_power_w);
        self.hob_w = hob;
        self.oven_w = oven_p;
        self.energy_j += (hob + oven_p) * dt;

        let g_pc = self.pan_to_contents_g();
        let q_pc = g_pc * (self.pan - self.contents);
        let q_pan_loss = 3.0 * (self.pan - AMBIENT_C);
        let q_contents_loss = self.contents_loss_g() * (self.contents - AMBIENT_C);
        self.pan += dt * (hob - q_pc - q_pan_loss) / self.spec.pan_c;
        let c = self.contents_c();
        self.contents += dt * (q_pc - q_contents_loss) / c;
        if self.kind == Contents::Water && self.mass_kg > 0.05 {
            let bp = self.boiling_point();
            if self.contents > bp {
                let surplus_j = (self.contents - bp) * c;
                self.mass_kg = (self.mass_kg - surplus_j / LATENT_J_PER_KG).max(0.05);
                self.contents = bp;
            }
        }

        let oven_c = 7000.0;
        let q_core = 3.5 * (self.oven - self.core);
        let q_oven_loss = 7.0 * (self.oven - AMBIENT_C);
        self.oven += dt * (oven_p - q_oven_loss - q_core) / oven_c;
        if self.core_in_contents {
            // A probe in the pot: the core relaxes towards the contents with a one-minute time
            // constant (exact for any step length), and the oven does not touch it.
            self.core = self.contents + (self.core - self.contents) * (-dt / 60.0).exp();
        } else {
            self.core += dt * q_core / 3000.0;
        }
        if self.core > CORE_MOISTURE_CLAMP_C {
            self.core = CORE_MOISTURE_CLAMP_C;
        }
    }
}
