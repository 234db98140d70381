//! What a run costs: the instance's hourly price times the time it ran.

/// On-demand USD per hour in us-east-1 (public price list, 2025), for the instance types the
/// template's compute environments launch. An estimate: Spot runs cost less, other regions
/// differ, and the figure leaves out storage and transfer.
const PRICES: &[(&str, f64)] = &[
    ("g6.xlarge", 0.8048),
    ("g6.2xlarge", 0.9776),
    ("g6.4xlarge", 1.3232),
    ("g6.8xlarge", 2.0144),
    ("g6.12xlarge", 4.6016),
    ("g6e.xlarge", 1.861),
    ("g6e.2xlarge", 2.24208),
    ("g5.xlarge", 1.006),
    ("g5.2xlarge", 1.212),
    ("g5.4xlarge", 1.624),
    ("g5.8xlarge", 2.448),
    ("g5.12xlarge", 5.672),
    ("p4d.24xlarge", 32.7726),
    ("p5.48xlarge", 98.32),
    ("c7i.2xlarge", 0.357),
    ("c7i.4xlarge", 0.714),
    ("m7i.2xlarge", 0.4032),
    // A run on the machine that serves the embedded default.
    ("local", 0.0),
];

/// The hourly price of `instance_type`, if it is one the estimate knows.
pub fn hourly_price(instance_type: &str) -> Option<f64> {
    PRICES
        .iter()
        .find(|(name, _)| *name == instance_type)
        .map(|&(_, price)| price)
}

/// The estimated cost in USD of `seconds` on `instance_type`, rounded to the cent.
pub fn cost_estimate(instance_type: &str, seconds: f64) -> Option<f64> {
    let dollars = hourly_price(instance_type)? * seconds.max(0.0) / 3600.0;
    Some((dollars * 100.0).round() / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn price_times_hours() {
        assert_eq!(cost_estimate("g6.xlarge", 3600.0), Some(0.8));
        assert_eq!(cost_estimate("g5.12xlarge", 1800.0), Some(2.84));
        assert_eq!(cost_estimate("local", 99_999.0), Some(0.0));
        assert_eq!(cost_estimate("g6.xlarge", -5.0), Some(0.0));
        assert_eq!(cost_estimate("z9.mega", 60.0), None);
    }
}
