"""Generated seed data (never edit by hand: run `autonumber spec generate`)."""
