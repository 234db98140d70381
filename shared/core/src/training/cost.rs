//! What a run costs: its share of the instance's hourly price times the time it ran.

/// On-demand USD per hour in us-east-1 (public price list, 2025) and GPUs, for the instance
/// types the template's compute environments launch. An estimate: Spot runs cost less, other
/// regions differ, and the figure leaves out storage and transfer.
const PRICES: &[(&str, f64, u32)] = &[
    ("g6.xlarge", 0.8048, 1),
    ("g6.2xlarge", 0.9776, 1),
    ("g6.4xlarge", 1.3232, 1),
    ("g6.8xlarge", 2.0144, 1),
    ("g6.12xlarge", 4.6016, 4),
    ("g6e.xlarge", 1.861, 1),
    ("g6e.2xlarge", 2.24208, 1),
    ("g6e.4xlarge", 3.00424, 1),
    ("g5.xlarge", 1.006, 1),
    ("g5.2xlarge", 1.212, 1),
    ("g5.4xlarge", 1.624, 1),
    ("g5.8xlarge", 2.448, 1),
    ("g5.12xlarge", 5.672, 4),
    ("p4d.24xlarge", 32.7726, 8),
    ("p5.48xlarge", 98.32, 8),
    ("c7i.2xlarge", 0.357, 0),
    ("c7i.4xlarge", 0.714, 0),
    ("m7i.2xlarge", 0.4032, 0),
    // A run on the machine that serves the embedded default.
    ("local", 0.0, 0),
];

/// The hourly price of `instance_type`, if it is one the estimate knows.
pub fn hourly_price(instance_type: &str) -> Option<f64> {
    PRICES
        .iter()
        .find(|(name, ..)| *name == instance_type)
        .map(|&(_, price, _)| price)
}

/// The estimated cost in USD of `seconds` of one job on `instance_type`, rounded to the cent:
/// a training job holds one GPU, so on an instance with several (Batch places a job per GPU)
/// it pays for its share.
pub fn cost_estimate(instance_type: &str, seconds: f64) -> Option<f64> {
    let &(_, price, gpus) = PRICES.iter().find(|(name, ..)| *name == instance_type)?;
    let dollars = price / f64::from(gpus.max(1)) * seconds.max(0.0) / 3600.0;
    Some((dollars * 100.0).round() / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn price_times_hours() {
        assert_eq!(cost_estimate("g6.xlarge", 3600.0), Some(0.8));
        // One of the instance's four GPUs.
        assert_eq!(cost_estimate("g5.12xlarge", 1800.0), Some(0.71));
        assert_eq!(cost_estimate("p5.48xlarge", 3600.0), Some(12.29));
        assert_eq!(cost_estimate("local", 99_999.0), Some(0.0));
        assert_eq!(cost_estimate("g6.xlarge", -5.0), Some(0.0));
        assert_eq!(cost_estimate("z9.mega", 60.0), None);
    }
}
