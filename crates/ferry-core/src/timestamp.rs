//! Timestamps as the API writes them: RFC 3339 in UTC with milliseconds, and the HTTP date of
//! `Last-Modified`.

use serde::{Serialize, Serializer};
use std::fmt;

/// Milliseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The system clock's time now (the epoch if the clock is set before it).
    pub fn now() -> Timestamp {
        Timestamp(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or_default(),
        )
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    /// `2026-11-21T09:30:00.123Z`.
    pub fn rfc3339(self) -> String {
        let (date, secs_of_day, millis) = self.split();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            date.0,
            date.1,
            date.2,
            secs_of_day / 3600,
            secs_of_day / 60 % 60,
            secs_of_day % 60,
            millis
        )
    }

    /// The IMF-fixdate of RFC 9110 §5.6.7: `Sat, 21 Nov 2026 09:30:00 GMT`.
    pub fn http_date(self) -> String {
        const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let (date, secs_of_day, _) = self.split();
        let days = self.0.div_euclid(86_400_000);
        format!(
            "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
            DAYS[days.rem_euclid(7) as usize],
            date.2,
            MONTHS[(date.1 - 1) as usize],
            date.0,
            secs_of_day / 3600,
            secs_of_day / 60 % 60,
            secs_of_day % 60
        )
    }

    /// The UTC calendar date and time of day, to the second.
    pub fn civil(self) -> Civil {
        let ((year, month, day), secs_of_day, _) = self.split();
        Civil {
            year,
            month,
            day,
            hour: (secs_of_day / 3600) as u32,
            minute: (secs_of_day / 60 % 60) as u32,
            second: (secs_of_day % 60) as u32,
        }
    }

    /// (year, month, day), seconds into the day, milliseconds into the second.
    fn split(self) -> ((i64, u32, u32), i64, i64) {
        let days = self.0.div_euclid(86_400_000);
        let ms_of_day = self.0.rem_euclid(86_400_000);
        (civil_from_days(days), ms_of_day / 1000, ms_of_day % 1000)
    }
}

/// A UTC date and time of day, as [`Timestamp::civil`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(Timestamp(0).rfc3339(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Timestamp(0).http_date(), "Thu, 01 Jan 1970 00:00:00 GMT");
        // 2026-11-21T09:30:00.123Z
        let t = Timestamp(1_795_253_400_123);
        assert_eq!(t.rfc3339(), "2026-11-21T09:30:00.123Z");
        assert_eq!(t.http_date(), "Sat, 21 Nov 2026 09:30:00 GMT");
        assert_eq!(
            t.civil(),
            Civil {
                year: 2026,
                month: 11,
                day: 21,
                hour: 9,
                minute: 30,
                second: 0
            }
        );
        // A leap day.
        assert_eq!(
            Timestamp(951_782_400_000).rfc3339(),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(
            serde_json::to_string(&Timestamp(1)).unwrap(),
            "\"1970-01-01T00:00:00.001Z\""
        );
    }
}
