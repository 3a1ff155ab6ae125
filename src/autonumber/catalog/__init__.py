"""The metadata catalog: objects, fields and parsed rules (`cache`), the stored rule (`stored`),
shared counters (`shared`) and allocation policies (`allocation`)."""
