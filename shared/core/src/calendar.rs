//! Calendar dates of epoch timestamps, for date partitions and dataset ids.

/// The UTC calendar date (`YYYY-MM-DD`) of epoch milliseconds.
pub fn utc_date(ms: i64) -> String {
    // Howard Hinnant's days-to-civil algorithm: exact over the whole proleptic Gregorian range.
    let days = ms.div_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_days() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400_000), "2000-02-29");
        assert_eq!(utc_date(1_795_305_599_999), "2026-11-21");
        assert_eq!(utc_date(1_795_305_600_000), "2026-11-22");
        assert_eq!(utc_date(-1), "1969-12-31");
    }
}
