"""The facility pack's domain as plain data: classes, pool individuals, labels, and the
generator's notion of what a plausible (clean) register looks like.

`generate.py` renders the OWL ontology and the demo corpus from this module. Labels are
specific multi-word phrases on purpose: the prose gate finds entities by matching every
label, synonym and IRI fragment on word boundaries, so a label must never occur in
ordinary prose by accident.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.pools import normalize_label

NAMESPACE = "http://membrane.dev/packs/facility#"
ONTOLOGY_IRI = "http://membrane.dev/packs/facility"
OWL = "http://www.w3.org/2002/07/owl#"
SKOS = "http://www.w3.org/2004/02/skos/core#"

DOMAINS = ("imaging", "hvac", "electrical")

# Row classes, then the pairwise disjoint top-level value classes.
ROW_CLASSES = ("RoomRow", "EquipmentRow", "MaintenanceRow")
VALUE_CLASSES = (
    "RoomType",
    "Department",
    "EquipmentType",
    "Standard",
    "Manufacturer",
    "MaintenanceActivity",
)
# parent -> domain -> subclass (pairwise disjoint within each parent)
DOMAIN_SUBCLASSES: dict[str, dict[str, str]] = {
    "EquipmentType": {
        "imaging": "ImagingEquipmentType",
        "hvac": "HVACEquipmentType",
        "electrical": "ElectricalEquipmentType",
    },
    "Standard": {
        "imaging": "ImagingStandard",
        "hvac": "HVACStandard",
        "electrical": "ElectricalStandard",
    },
    "Manufacturer": {
        "imaging": "ImagingManufacturer",
        "hvac": "HVACManufacturer",
        "electrical": "ElectricalManufacturer",
    },
}
# domain -> defined row class
DOMAIN_ROW_CLASSES = {
    "imaging": "ImagingEquipmentRow",
    "hvac": "HVACEquipmentRow",
    "electrical": "ElectricalEquipmentRow",
}

# property -> (row class, range class); all functional
OBJECT_PROPERTIES: dict[str, tuple[str, str]] = {
    "hasRoomType": ("RoomRow", "RoomType"),
    "hasDepartment": ("RoomRow", "Department"),
    "hasEquipmentType": ("EquipmentRow", "EquipmentType"),
    "hasStandard": ("EquipmentRow", "Standard"),
    "hasManufacturer": ("EquipmentRow", "Manufacturer"),
    "hasActivity": ("MaintenanceRow", "MaintenanceActivity"),
}
# property -> (row class, xsd datatype, [(facet, literal)]); all functional
DATA_PROPERTIES: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "onFloor": ("RoomRow", "integer", [("minInclusive", "-3"), ("maxInclusive", "40")]),
    "hasRatedPowerKw": ("EquipmentRow", "decimal", [("minExclusive", "0")]),
    "hasIntervalMonths": (
        "MaintenanceRow", "integer", [("minInclusive", "1"), ("maxInclusive", "120")]
    ),
}

# table -> column -> value class of an object column (what a clean cell must name)
OBJECT_COLUMNS: dict[str, dict[str, str]] = {
    "rooms": {"room_type": "RoomType", "department": "Department"},
    "equipment": {
        "equipment_type": "EquipmentType",
        "standard": "Standard",
        "manufacturer": "Manufacturer",
    },
    "maintenance": {"activity": "MaintenanceActivity"},
}
COLUMNS: dict[str, tuple[str, ...]] = {
    "rooms": ("room_id", "room_type", "department", "floor"),
    "equipment": (
        "equipment_id",
        "room_id",
        "equipment_type",
        "standard",
        "manufacturer",
        "rated_power_kw",
    ),
    "maintenance": ("task_id", "equipment_id", "activity", "interval_months"),
}
ROOM_POWER_BUDGET_KW = 2000.0
# Specialists: chosen only where an equipment type lists them explicitly.
SPECIALIST_MANUFACTURERS = frozenset({"cummins_power_generation"})


@dataclass(frozen=True)
class Individual:
    name: str  # IRI fragment
    cls: str  # most specific class
    label: str  # rdfs:label, the preferred label used in cells
    alt: tuple[str, ...] = ()  # skos:altLabel synonyms
    domain: str = ""  # imaging / hvac / electrical, where the class has one


@dataclass(frozen=True)
class EquipmentSpec:
    name: str
    power_kw: tuple[float, float]
    standards: tuple[str, ...]
    activities: tuple[str, ...]
    manufacturers: tuple[str, ...] = ()  # empty: any manufacturer of the domain


@dataclass(frozen=True)
class RoomSpec:
    name: str
    departments: tuple[str, ...]
    floors: tuple[int, int]
    equipment: tuple[str, ...]


@dataclass(frozen=True)
class ActivitySpec:
    name: str
    intervals: tuple[int, ...] = field(default=(12,))


def _ind(name: str, cls: str, label: str, *alt: str, domain: str = "") -> Individual:
    return Individual(name=name, cls=cls, label=label, alt=tuple(alt), domain=domain)


_IET, _HET, _EET = "ImagingEquipmentType", "HVACEquipmentType", "ElectricalEquipmentType"
_IST, _HST, _EST = "ImagingStandard", "HVACStandard", "ElectricalStandard"
_IMF, _HMF, _EMF = "ImagingManufacturer", "HVACManufacturer", "ElectricalManufacturer"

INDIVIDUALS: tuple[Individual, ...] = (
    # imaging equipment types
    _ind("ct_scanner", _IET, "CT scanner", "computed tomography scanner", domain="imaging"),
    _ind("mri_scanner", _IET, "MRI scanner", "magnetic resonance imaging scanner",
         domain="imaging"),
    _ind("xray_unit", _IET, "X-ray unit", "radiographic X-ray system", domain="imaging"),
    _ind("ultrasound_system", _IET, "ultrasound system", "diagnostic ultrasound scanner",
         domain="imaging"),
    _ind("pet_ct_scanner", _IET, "PET-CT scanner", "PET/CT scanner", domain="imaging"),
    _ind("mammography_unit", _IET, "mammography unit", "mammography system", domain="imaging"),
    _ind("fluoroscopy_system", _IET, "fluoroscopy system", "fluoroscopy unit", domain="imaging"),
    _ind("linear_accelerator", _IET, "linear accelerator", "medical linear accelerator",
         domain="imaging"),
    # HVAC equipment types
    _ind("air_handling_unit", _HET, "air handling unit", "air handler unit", domain="hvac"),
    _ind("water_cooled_chiller", _HET, "water-cooled chiller", "centrifugal chiller",
         domain="hvac"),
    _ind("cooling_tower", _HET, "cooling tower", "evaporative cooling tower", domain="hvac"),
    _ind("hot_water_boiler", _HET, "hot water boiler", "heating hot water boiler", domain="hvac"),
    _ind("fan_coil_unit", _HET, "fan coil unit", domain="hvac"),
    _ind("exhaust_fan", _HET, "exhaust fan", "extract fan", domain="hvac"),
    _ind("vav_box", _HET, "VAV box", "variable air volume box", domain="hvac"),
    _ind("heat_recovery_ventilator", _HET, "heat recovery ventilator", domain="hvac"),
    # electrical equipment types
    _ind("medium_voltage_switchgear", _EET, "medium-voltage switchgear", "MV switchgear",
         domain="electrical"),
    _ind("uninterruptible_power_supply", _EET, "uninterruptible power supply", "UPS system",
         domain="electrical"),
    _ind("diesel_generator", _EET, "diesel generator", "standby diesel generator set",
         domain="electrical"),
    _ind("dry_type_transformer", _EET, "dry-type transformer", "cast resin transformer",
         domain="electrical"),
    _ind("automatic_transfer_switch", _EET, "automatic transfer switch", domain="electrical"),
    _ind("distribution_panelboard", _EET, "distribution panelboard", "distribution board",
         domain="electrical"),
    _ind("isolated_power_panel", _EET, "isolated power panel", "isolated power system",
         domain="electrical"),
    _ind("battery_bank", _EET, "battery bank", "stationary battery bank", domain="electrical"),
    # imaging standards
    _ind("IEC_60601_1", _IST, "IEC 60601-1", domain="imaging"),
    _ind("IEC_60601_2_44", _IST, "IEC 60601-2-44", domain="imaging"),
    _ind("IEC_60601_2_33", _IST, "IEC 60601-2-33", domain="imaging"),
    _ind("IEC_60601_2_54", _IST, "IEC 60601-2-54", domain="imaging"),
    _ind("IEC_60601_2_37", _IST, "IEC 60601-2-37", domain="imaging"),
    _ind("IEC_60601_2_45", _IST, "IEC 60601-2-45", domain="imaging"),
    _ind("IEC_60601_2_1", _IST, "IEC 60601-2-1", domain="imaging"),
    _ind("NEMA_XR_29", _IST, "NEMA XR 29", "NEMA XR-29", domain="imaging"),
    _ind("IEC_61223_3_5", _IST, "IEC 61223-3-5", domain="imaging"),
    # HVAC standards
    _ind("ASHRAE_62_1", _HST, "ASHRAE 62.1", "ASHRAE Standard 62.1", domain="hvac"),
    _ind("ASHRAE_170", _HST, "ASHRAE 170", "ASHRAE Standard 170", domain="hvac"),
    _ind("ASHRAE_90_1", _HST, "ASHRAE 90.1", "ASHRAE Standard 90.1", domain="hvac"),
    _ind("ASHRAE_52_2", _HST, "ASHRAE 52.2", "ASHRAE Standard 52.2", domain="hvac"),
    _ind("ASHRAE_15", _HST, "ASHRAE 15", "ASHRAE Standard 15", domain="hvac"),
    _ind("SMACNA_HVAC", _HST, "SMACNA duct construction standard",
         "SMACNA HVAC Duct Construction Standards", domain="hvac"),
    # electrical standards
    _ind("NFPA_70", _EST, "NFPA 70", "National Electrical Code", domain="electrical"),
    _ind("NFPA_99", _EST, "NFPA 99", "Health Care Facilities Code", domain="electrical"),
    _ind("NFPA_110", _EST, "NFPA 110", domain="electrical"),
    _ind("IEC_60364_7_710", _EST, "IEC 60364-7-710", domain="electrical"),
    _ind("IEEE_C57_12_00", _EST, "IEEE C57.12.00", domain="electrical"),
    _ind("IEC_62040_3", _EST, "IEC 62040-3", domain="electrical"),
    # manufacturers
    _ind("siemens_healthineers", _IMF, "Siemens Healthineers", domain="imaging"),
    _ind("ge_healthcare", _IMF, "GE HealthCare", "GE Healthcare", domain="imaging"),
    _ind("philips_healthcare", _IMF, "Philips Healthcare", domain="imaging"),
    _ind("canon_medical", _IMF, "Canon Medical Systems", "Canon Medical", domain="imaging"),
    _ind("carrier_corporation", _HMF, "Carrier Corporation", "Carrier Global", domain="hvac"),
    _ind("trane_technologies", _HMF, "Trane Technologies", domain="hvac"),
    _ind("daikin_applied", _HMF, "Daikin Applied", "Daikin Industries", domain="hvac"),
    _ind("johnson_controls", _HMF, "Johnson Controls", domain="hvac"),
    _ind("schneider_electric", _EMF, "Schneider Electric", domain="electrical"),
    _ind("abb_electrification", _EMF, "ABB Electrification", domain="electrical"),
    _ind("eaton_corporation", _EMF, "Eaton Corporation", domain="electrical"),
    _ind("cummins_power_generation", _EMF, "Cummins Power Generation", domain="electrical"),
    # room types
    _ind("diagnostic_imaging_suite", "RoomType", "diagnostic imaging suite"),
    _ind("radiotherapy_bunker", "RoomType", "radiotherapy bunker", "linac bunker"),
    _ind("operating_theatre", "RoomType", "operating theatre", "surgical operating room"),
    _ind("airborne_isolation_room", "RoomType", "airborne isolation room",
         "airborne infection isolation room"),
    _ind("mechanical_plant_room", "RoomType", "mechanical plant room"),
    _ind("electrical_switch_room", "RoomType", "electrical switch room"),
    _ind("rooftop_plant_area", "RoomType", "rooftop plant area"),
    # departments
    _ind("radiology_department", "Department", "radiology department"),
    _ind("nuclear_medicine_department", "Department", "nuclear medicine department"),
    _ind("radiation_oncology_department", "Department", "radiation oncology department"),
    _ind("surgical_department", "Department", "surgical department"),
    _ind("intensive_care_unit", "Department", "intensive care unit", "critical care unit"),
    _ind("emergency_department", "Department", "emergency department"),
    _ind("facilities_engineering_department", "Department",
         "facilities engineering department"),
    # maintenance activities
    _ind("dosimetry_calibration", "MaintenanceActivity", "dosimetry calibration"),
    _ind("image_quality_test", "MaintenanceActivity", "image quality test",
         "image quality assurance test"),
    _ind("radiation_leakage_survey", "MaintenanceActivity", "radiation leakage survey"),
    _ind("cryogen_level_check", "MaintenanceActivity", "cryogen level check",
         "helium level check"),
    _ind("electrical_safety_test", "MaintenanceActivity", "electrical safety test"),
    _ind("filter_replacement", "MaintenanceActivity", "filter replacement", "filter change"),
    _ind("coil_cleaning", "MaintenanceActivity", "coil cleaning"),
    _ind("refrigerant_leak_check", "MaintenanceActivity", "refrigerant leak check"),
    _ind("airflow_balancing", "MaintenanceActivity", "airflow balancing"),
    _ind("thermographic_survey", "MaintenanceActivity", "thermographic survey",
         "infrared thermography survey"),
    _ind("load_bank_test", "MaintenanceActivity", "load bank test"),
    _ind("insulation_resistance_test", "MaintenanceActivity", "insulation resistance test"),
    _ind("battery_discharge_test", "MaintenanceActivity", "battery discharge test"),
)
# --- vocabulary: more synonyms (skos:altLabel) and maintenance activities ---
# A realistic register vocabulary is larger than the values the demo corpus draws: the
# prose gate's matcher is built over every label (the bench needs >= 500 of them). The
# activities below are pool members no generator rule samples, so the demo corpus does not
# depend on them.

_SYNONYMS: dict[str, tuple[str, ...]] = {
    "ct_scanner": ("CT system", "CAT scanner", "computed tomography system"),
    "mri_scanner": ("MRI system", "MR scanner", "magnetic resonance scanner"),
    "xray_unit": ("X-ray machine", "radiography unit", "general radiography room unit"),
    "ultrasound_system": ("ultrasound machine", "sonography system", "ultrasound scanner"),
    "pet_ct_scanner": ("PET CT system", "positron emission tomography scanner"),
    "mammography_unit": ("mammography machine", "breast imaging unit", "mammogram unit"),
    "fluoroscopy_system": ("fluoroscopy machine", "C-arm fluoroscope", "fluoroscopic imaging system"),
    "linear_accelerator": ("linac machine", "radiotherapy linear accelerator", "LINAC system"),
    "air_handling_unit": ("AHU unit", "air handler", "central air handling unit"),
    "water_cooled_chiller": ("water chiller", "chiller plant unit", "water-cooled chiller unit"),
    "cooling_tower": ("open cooling tower", "cooling tower cell", "induced draft cooling tower"),
    "hot_water_boiler": ("heating boiler", "LTHW boiler", "low temperature hot water boiler"),
    "fan_coil_unit": ("FCU unit", "fan coil", "ceiling fan coil unit"),
    "exhaust_fan": ("extract ventilation fan", "exhaust air fan", "toilet extract fan"),
    "vav_box": ("VAV terminal unit", "VAV terminal", "variable air volume terminal"),
    "heat_recovery_ventilator": ("HRV unit", "energy recovery ventilator", "heat recovery unit"),
    "medium_voltage_switchgear": ("HV switchgear", "MV switchboard", "medium-voltage switchboard"),
    "uninterruptible_power_supply": ("UPS unit", "static UPS", "uninterruptible power system"),
    "diesel_generator": ("emergency generator", "standby generator", "diesel generating set"),
    "dry_type_transformer": ("dry transformer", "distribution transformer", "resin cast transformer"),
    "automatic_transfer_switch": ("ATS unit", "transfer switch", "automatic changeover switch"),
    "distribution_panelboard": ("distribution panel", "electrical panelboard", "sub-distribution board"),
    "isolated_power_panel": ("IT isolation panel", "medical IT system", "isolated power supply panel"),
    "battery_bank": ("battery string", "UPS battery bank", "battery rack"),
    "IEC_60601_1": ("EN 60601-1", "BS EN 60601-1"),
    "IEC_60601_2_44": ("EN 60601-2-44", "BS EN 60601-2-44"),
    "IEC_60601_2_33": ("EN 60601-2-33", "BS EN 60601-2-33"),
    "IEC_60601_2_54": ("EN 60601-2-54", "BS EN 60601-2-54"),
    "IEC_60601_2_37": ("EN 60601-2-37", "BS EN 60601-2-37"),
    "IEC_60601_2_45": ("EN 60601-2-45", "BS EN 60601-2-45"),
    "IEC_60601_2_1": ("EN 60601-2-1", "BS EN 60601-2-1"),
    "NEMA_XR_29": ("NEMA Smart Dose standard", "MITA Smart Dose"),
    "IEC_61223_3_5": ("EN 61223-3-5", "BS EN 61223-3-5"),
    "ASHRAE_62_1": ("ANSI/ASHRAE 62.1", "ASHRAE ventilation standard"),
    "ASHRAE_170": ("ANSI/ASHRAE/ASHE 170", "ASHRAE health care ventilation standard"),
    "ASHRAE_90_1": ("ANSI/ASHRAE/IES 90.1", "ASHRAE energy standard"),
    "ASHRAE_52_2": ("ANSI/ASHRAE 52.2", "ASHRAE filter test standard"),
    "ASHRAE_15": ("ANSI/ASHRAE 15", "ASHRAE refrigeration safety standard"),
    "SMACNA_HVAC": ("SMACNA duct standard", "SMACNA duct construction manual"),
    "NFPA_70": ("NFPA 70 NEC", "NEC code book"),
    "NFPA_99": ("NFPA 99 code", "NFPA health care code"),
    "NFPA_110": ("NFPA 110 standard", "emergency power systems standard"),
    "IEC_60364_7_710": ("HD 60364-7-710", "BS 7671 section 710"),
    "IEEE_C57_12_00": ("ANSI C57.12.00", "IEEE transformer standard"),
    "IEC_62040_3": ("EN 62040-3", "BS EN 62040-3"),
    "siemens_healthineers": ("Siemens Healthcare", "Siemens Medical Solutions"),
    "ge_healthcare": ("GE Medical Systems", "General Electric Healthcare"),
    "philips_healthcare": ("Philips Medical Systems", "Royal Philips"),
    "canon_medical": ("Toshiba Medical Systems", "Canon Medical Systems Corporation"),
    "carrier_corporation": ("Carrier HVAC", "Carrier Air Conditioning"),
    "trane_technologies": ("Trane Inc", "Trane HVAC"),
    "daikin_applied": ("Daikin Applied Americas", "McQuay International"),
    "johnson_controls": ("Johnson Controls International", "York International"),
    "schneider_electric": ("Schneider Electric SE", "Square D"),
    "abb_electrification": ("ABB Ltd", "ABB Electrification Products"),
    "eaton_corporation": ("Eaton Electrical", "Cutler-Hammer"),
    "cummins_power_generation": ("Cummins Power", "Cummins Generator Technologies"),
    "diagnostic_imaging_suite": ("imaging suite", "diagnostic imaging room", "scanner suite"),
    "radiotherapy_bunker": ("treatment bunker", "radiotherapy vault", "linac vault"),
    "operating_theatre": ("operating room", "surgical theatre", "theatre suite"),
    "airborne_isolation_room": ("negative pressure room", "isolation room", "AIIR room"),
    "mechanical_plant_room": ("plant room", "mechanical room", "boiler house"),
    "electrical_switch_room": ("switch room", "electrical room", "LV switch room"),
    "rooftop_plant_area": ("rooftop plant", "roof plant deck", "roof plant area"),
    "radiology_department": ("radiology service", "diagnostic radiology department"),
    "nuclear_medicine_department": ("nuclear medicine service", "nuclear medicine unit"),
    "radiation_oncology_department": ("radiotherapy department", "clinical oncology department"),
    "surgical_department": ("theatres department", "surgical directorate"),
    "intensive_care_unit": ("ICU ward", "critical care ward"),
    "emergency_department": ("accident and emergency", "emergency room department"),
    "facilities_engineering_department": ("estates and facilities", "facilities management department"),
    "dosimetry_calibration": ("dosimeter calibration", "output dosimetry check"),
    "image_quality_test": ("image quality check", "phantom image test"),
    "radiation_leakage_survey": ("leakage radiation survey", "radiation protection survey"),
    "cryogen_level_check": ("cryogen check", "magnet helium check"),
    "electrical_safety_test": ("electrical safety inspection", "medical electrical safety test"),
    "filter_replacement": ("filter renewal", "air filter replacement"),
    "coil_cleaning": ("coil wash", "heat exchanger coil cleaning"),
    "refrigerant_leak_check": ("refrigerant leak test", "F-gas leak check"),
    "airflow_balancing": ("air balancing", "airflow commissioning check"),
    "thermographic_survey": ("thermal imaging survey", "IR thermography inspection"),
    "load_bank_test": ("load bank run", "generator load test"),
    "insulation_resistance_test": ("insulation test", "megger test"),
    "battery_discharge_test": ("battery capacity test", "battery autonomy test"),
}

_MORE_ACTIVITIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("belt_tension_check", "belt tension check", ("drive belt inspection",)),
    ("bearing_lubrication", "bearing lubrication", ("bearing greasing",)),
    ("vibration_analysis", "vibration analysis", ("vibration monitoring survey",)),
    ("condenser_water_treatment", "condenser water treatment", ("cooling water dosing",)),
    ("legionella_risk_assessment", "legionella risk assessment", ("legionella survey",)),
    ("legionella_sampling", "legionella sampling", ("water sample for legionella",)),
    ("fire_damper_drop_test", "fire damper drop test", ("fire damper inspection",)),
    ("smoke_damper_test", "smoke damper test", ("smoke control damper check",)),
    ("emergency_lighting_test", "emergency lighting test", ("emergency luminaire test",)),
    ("earth_continuity_test", "earth continuity test", ("protective conductor test",)),
    ("rcd_trip_test", "RCD trip test", ("residual current device test",)),
    ("portable_appliance_test", "portable appliance test", ("PAT inspection",)),
    ("circuit_breaker_trip_test", "circuit breaker trip test", ("breaker injection test",)),
    ("protection_relay_test", "protection relay test", ("relay secondary injection",)),
    ("torque_check", "busbar torque check", ("connection torque check",)),
    ("switchgear_cleaning", "switchgear cleaning", ("panel vacuum cleaning",)),
    ("transformer_oil_analysis", "transformer oil analysis", ("dissolved gas analysis",)),
    ("partial_discharge_survey", "partial discharge survey", ("PD survey",)),
    ("fuel_polishing", "fuel polishing", ("diesel fuel polishing",)),
    ("fuel_sample_analysis", "fuel sample analysis", ("fuel quality test",)),
    ("coolant_check", "engine coolant check", ("antifreeze check",)),
    ("starter_battery_check", "starter battery check", ("cranking battery test",)),
    ("transfer_switch_exercise", "transfer switch exercise", ("ATS changeover test",)),
    ("generator_run_test", "generator run test", ("no-load generator run",)),
    ("battery_impedance_test", "battery impedance test", ("cell impedance measurement",)),
    ("ups_bypass_test", "UPS bypass test", ("static bypass transfer test",)),
    ("capacitor_inspection", "capacitor inspection", ("DC capacitor check",)),
    ("chiller_tube_cleaning", "chiller tube cleaning", ("condenser tube brushing",)),
    ("compressor_oil_analysis", "compressor oil analysis", ("refrigeration oil test",)),
    ("pressure_relief_valve_test", "pressure relief valve test", ("safety valve test",)),
    ("boiler_combustion_analysis", "boiler combustion analysis", ("flue gas analysis",)),
    ("burner_service", "burner service", ("burner tune-up",)),
    ("boiler_water_treatment", "boiler water treatment", ("boiler feedwater dosing",)),
    ("expansion_vessel_check", "expansion vessel check", ("pressurisation unit check",)),
    ("pump_seal_inspection", "pump seal inspection", ("mechanical seal check",)),
    ("strainer_cleaning", "strainer cleaning", ("pipeline strainer clean",)),
    ("valve_exercising", "valve exercising", ("isolation valve operation",)),
    ("damper_actuator_check", "damper actuator check", ("actuator stroke test",)),
    ("duct_cleaning", "duct cleaning", ("ductwork hygiene clean",)),
    ("duct_leakage_test", "duct leakage test", ("ductwork air leakage test",)),
    ("hepa_filter_integrity_test", "HEPA filter integrity test", ("HEPA leak scan",)),
    ("room_pressure_verification", "room pressure verification", ("pressure cascade check",)),
    ("air_change_rate_test", "air change rate test", ("ventilation rate measurement",)),
    ("humidifier_service", "humidifier service", ("steam humidifier clean",)),
    ("drain_pan_cleaning", "drain pan cleaning", ("condensate tray clean",)),
    ("bms_sensor_calibration", "BMS sensor calibration", ("building management sensor check",)),
    ("thermostat_calibration", "thermostat calibration", ("room thermostat check",)),
    ("fan_motor_inspection", "fan motor inspection", ("motor winding check",)),
    ("heat_wheel_inspection", "heat wheel inspection", ("thermal wheel check",)),
    ("coil_fin_combing", "coil fin combing", ("fin straightening",)),
    ("tube_output_calibration", "tube output calibration", ("kVp accuracy check",)),
    ("collimator_alignment_check", "collimator alignment check", ("light field alignment test",)),
    ("detector_calibration", "detector calibration", ("flat panel calibration",)),
    ("gantry_inspection", "gantry inspection", ("gantry mechanical check",)),
    ("patient_table_inspection", "patient table inspection", ("couch mechanical check",)),
    ("magnet_shim_check", "magnet shim check", ("field homogeneity test",)),
    ("rf_coil_test", "RF coil test", ("receive coil quality test",)),
    ("quench_pipe_inspection", "quench pipe inspection", ("quench vent check",)),
    ("mri_cold_head_service", "MRI cold head service", ("cold head replacement",)),
    ("transducer_inspection", "transducer inspection", ("probe integrity check",)),
    ("compression_force_check", "compression force check", ("paddle force test",)),
    ("aec_performance_test", "AEC performance test", ("automatic exposure control test",)),
    ("beam_output_check", "beam output check", ("linac output constancy check",)),
    ("mlc_leaf_check", "MLC leaf position check", ("multileaf collimator test",)),
    ("interlock_test", "safety interlock test", ("door interlock check",)),
    ("radiation_monitor_check", "area radiation monitor check", ("room monitor check",)),
    ("software_update", "vendor software update", ("firmware upgrade",)),
    ("preventive_maintenance_visit", "preventive maintenance visit", ("PPM visit",)),
    ("annual_service_visit", "annual service visit", ("yearly service inspection",)),
    ("condition_survey", "asset condition survey", ("condition assessment survey",)),
    ("gas_detection_test", "gas detection test", ("refrigerant gas detector check",)),
    ("sprinkler_valve_test", "sprinkler valve test", ("wet riser valve check",)),
    ("water_hardness_check", "water hardness check", ("softener brine check",)),
    ("variable_speed_drive_check", "variable speed drive check", ("VSD inspection",)),
    ("harmonic_survey", "power quality survey", ("harmonic distortion survey",)),
    ("earth_electrode_test", "earth electrode test", ("earth rod resistance test",)),
    ("lightning_protection_test", "lightning protection test", ("lightning conductor inspection",)),
    ("cable_thermal_check", "cable termination check", ("cable gland inspection",)),
    ("ups_fan_replacement", "UPS fan replacement", ("UPS cooling fan change",)),
    ("battery_terminal_cleaning", "battery terminal cleaning", ("terminal corrosion clean",)),
    ("electrolyte_level_check", "electrolyte level check", ("cell electrolyte top-up",)),
    ("exhaust_system_inspection", "engine exhaust inspection", ("silencer inspection",)),
    ("day_tank_inspection", "day tank inspection", ("fuel day tank check",)),
    ("pump_alignment_check", "pump alignment check", ("shaft alignment check",)),
    ("motor_insulation_test", "motor insulation test", ("winding insulation test",)),
    ("cooling_tower_disinfection", "cooling tower disinfection", ("tower chlorination",)),
    ("fill_pack_inspection", "fill pack inspection", ("tower fill inspection",)),
    ("spray_nozzle_cleaning", "spray nozzle cleaning", ("distribution nozzle clean",)),
    ("heat_pump_service", "refrigeration circuit service", ("refrigerant charge check",)),
    ("noise_survey", "plant noise survey", ("acoustic noise measurement",)),
    ("shielding_integrity_survey", "shielding integrity survey", ("lead lining survey",)),
    ("contrast_injector_service", "contrast injector service", ("power injector check",)),
    ("dose_display_verification", "dose display verification", ("DAP meter calibration",)),
    ("ct_number_accuracy_test", "CT number accuracy test", ("Hounsfield unit check",)),
    ("slice_thickness_test", "slice thickness test", ("slice width check",)),
)

INDIVIDUALS = tuple(
    Individual(i.name, i.cls, i.label, i.alt + _SYNONYMS.get(i.name, ()), i.domain)
    for i in INDIVIDUALS
) + tuple(_ind(name, "MaintenanceActivity", label, *alt) for name, label, alt in _MORE_ACTIVITIES)
BY_NAME: dict[str, Individual] = {i.name: i for i in INDIVIDUALS}

ACTIVITIES: dict[str, ActivitySpec] = {
    a.name: a
    for a in (
        ActivitySpec("dosimetry_calibration", (6, 12)),
        ActivitySpec("image_quality_test", (3, 6, 12)),
        ActivitySpec("radiation_leakage_survey", (12, 24)),
        ActivitySpec("cryogen_level_check", (1, 3)),
        ActivitySpec("electrical_safety_test", (12, 24)),
        ActivitySpec("filter_replacement", (3, 6)),
        ActivitySpec("coil_cleaning", (6, 12)),
        ActivitySpec("refrigerant_leak_check", (6, 12)),
        ActivitySpec("airflow_balancing", (12, 24, 36)),
        ActivitySpec("thermographic_survey", (12, 24)),
        ActivitySpec("load_bank_test", (1, 12)),
        ActivitySpec("insulation_resistance_test", (12, 36, 60)),
        ActivitySpec("battery_discharge_test", (6, 12)),
    )
}

_IMG_ACT = ("image_quality_test", "electrical_safety_test")
_HVAC_ACT = ("filter_replacement", "coil_cleaning")
_ELEC_ACT = ("thermographic_survey", "insulation_resistance_test")

EQUIPMENT: dict[str, EquipmentSpec] = {
    e.name: e
    for e in (
        EquipmentSpec("ct_scanner", (80.0, 150.0),
                      ("IEC_60601_2_44", "NEMA_XR_29", "IEC_61223_3_5", "IEC_60601_1"),
                      (*_IMG_ACT, "dosimetry_calibration")),
        EquipmentSpec("mri_scanner", (45.0, 110.0), ("IEC_60601_2_33", "IEC_60601_1"),
                      (*_IMG_ACT, "cryogen_level_check")),
        EquipmentSpec("xray_unit", (20.0, 80.0), ("IEC_60601_2_54", "IEC_60601_1"),
                      (*_IMG_ACT, "dosimetry_calibration", "radiation_leakage_survey")),
        EquipmentSpec("ultrasound_system", (0.5, 2.5), ("IEC_60601_2_37", "IEC_60601_1"),
                      _IMG_ACT),
        EquipmentSpec("pet_ct_scanner", (90.0, 160.0), ("IEC_60601_2_44", "IEC_60601_1"),
                      (*_IMG_ACT, "dosimetry_calibration")),
        EquipmentSpec("mammography_unit", (5.0, 15.0), ("IEC_60601_2_45", "IEC_60601_1"),
                      (*_IMG_ACT, "dosimetry_calibration")),
        EquipmentSpec("fluoroscopy_system", (40.0, 100.0), ("IEC_60601_2_54", "IEC_60601_1"),
                      (*_IMG_ACT, "radiation_leakage_survey")),
        EquipmentSpec("linear_accelerator", (40.0, 90.0), ("IEC_60601_2_1", "IEC_60601_1"),
                      (*_IMG_ACT, "dosimetry_calibration", "radiation_leakage_survey")),
        EquipmentSpec("air_handling_unit", (15.0, 110.0),
                      ("ASHRAE_170", "ASHRAE_62_1", "ASHRAE_52_2", "SMACNA_HVAC"),
                      (*_HVAC_ACT, "airflow_balancing")),
        EquipmentSpec("water_cooled_chiller", (200.0, 750.0), ("ASHRAE_90_1", "ASHRAE_15"),
                      ("coil_cleaning", "refrigerant_leak_check")),
        EquipmentSpec("cooling_tower", (15.0, 60.0), ("ASHRAE_90_1",), ("coil_cleaning",)),
        EquipmentSpec("hot_water_boiler", (150.0, 700.0), ("ASHRAE_90_1",), ("coil_cleaning",)),
        EquipmentSpec("fan_coil_unit", (0.1, 1.2), ("ASHRAE_62_1", "ASHRAE_90_1"), _HVAC_ACT),
        EquipmentSpec("exhaust_fan", (0.5, 15.0), ("ASHRAE_62_1", "ASHRAE_170", "SMACNA_HVAC"),
                      ("airflow_balancing", "filter_replacement")),
        EquipmentSpec("vav_box", (0.1, 0.4), ("ASHRAE_62_1", "ASHRAE_170", "ASHRAE_90_1"),
                      ("airflow_balancing",)),
        EquipmentSpec("heat_recovery_ventilator", (2.0, 20.0),
                      ("ASHRAE_62_1", "ASHRAE_90_1", "ASHRAE_52_2"), _HVAC_ACT),
        EquipmentSpec("medium_voltage_switchgear", (0.5, 5.0), ("NFPA_70", "NFPA_99"),
                      _ELEC_ACT),
        EquipmentSpec("uninterruptible_power_supply", (10.0, 300.0),
                      ("IEC_62040_3", "NFPA_99", "NFPA_70"),
                      ("battery_discharge_test", "thermographic_survey")),
        EquipmentSpec("diesel_generator", (300.0, 900.0), ("NFPA_110", "NFPA_99"),
                      ("load_bank_test", "insulation_resistance_test"),
                      ("cummins_power_generation", "abb_electrification")),
        EquipmentSpec("dry_type_transformer", (2.0, 12.0), ("IEEE_C57_12_00", "NFPA_70"),
                      _ELEC_ACT),
        EquipmentSpec("automatic_transfer_switch", (0.2, 2.0), ("NFPA_110", "NFPA_99"),
                      ("thermographic_survey", "load_bank_test"),
                      ("cummins_power_generation", "schneider_electric", "eaton_corporation")),
        EquipmentSpec("distribution_panelboard", (0.1, 1.0), ("NFPA_70", "IEC_60364_7_710"),
                      _ELEC_ACT),
        EquipmentSpec("isolated_power_panel", (0.2, 1.5), ("NFPA_99", "IEC_60364_7_710"),
                      _ELEC_ACT),
        EquipmentSpec("battery_bank", (1.0, 8.0), ("IEC_62040_3", "NFPA_70"),
                      ("battery_discharge_test", "thermographic_survey")),
    )
}

ROOMS: dict[str, RoomSpec] = {
    r.name: r
    for r in (
        RoomSpec("diagnostic_imaging_suite",
                 ("radiology_department", "nuclear_medicine_department", "emergency_department"),
                 (-2, 3),
                 ("ct_scanner", "mri_scanner", "xray_unit", "ultrasound_system", "pet_ct_scanner",
                  "mammography_unit", "fluoroscopy_system", "fan_coil_unit", "vav_box",
                  "exhaust_fan", "uninterruptible_power_supply", "distribution_panelboard")),
        RoomSpec("radiotherapy_bunker", ("radiation_oncology_department",), (-3, 0),
                 ("linear_accelerator", "vav_box", "exhaust_fan", "uninterruptible_power_supply",
                  "distribution_panelboard")),
        RoomSpec("operating_theatre", ("surgical_department",), (1, 6),
                 ("fluoroscopy_system", "xray_unit", "ultrasound_system", "vav_box",
                  "heat_recovery_ventilator", "isolated_power_panel",
                  "uninterruptible_power_supply", "distribution_panelboard")),
        RoomSpec("airborne_isolation_room", ("intensive_care_unit", "emergency_department"),
                 (1, 8),
                 ("xray_unit", "ultrasound_system", "exhaust_fan", "vav_box", "fan_coil_unit",
                  "heat_recovery_ventilator", "isolated_power_panel", "distribution_panelboard")),
        RoomSpec("mechanical_plant_room", ("facilities_engineering_department",), (-3, -1),
                 ("air_handling_unit", "water_cooled_chiller", "hot_water_boiler",
                  "heat_recovery_ventilator", "exhaust_fan", "distribution_panelboard")),
        RoomSpec("electrical_switch_room", ("facilities_engineering_department",), (-3, 0),
                 ("medium_voltage_switchgear", "uninterruptible_power_supply", "diesel_generator",
                  "dry_type_transformer", "automatic_transfer_switch", "distribution_panelboard",
                  "battery_bank")),
        RoomSpec("rooftop_plant_area", ("facilities_engineering_department",), (6, 20),
                 ("cooling_tower", "air_handling_unit", "exhaust_fan", "water_cooled_chiller",
                  "heat_recovery_ventilator", "diesel_generator")),
    )
}

SITES = (
    "Northgate General Hospital",
    "St Aldhelm's Hospital",
    "Riverside University Hospital",
    "Harbourview Medical Centre",
    "Westmoor District Hospital",
    "Kingsbridge Children's Hospital",
    "Eastfield Regional Hospital",
    "Lakeside Teaching Hospital",
)
WINGS = ("North Wing", "South Wing", "East Block", "West Block", "Tower A", "Tower B", "Annex")

# Defect material: placeholders (a subset of pack.toml [policy]) and plausible non-pool values.
PLACEHOLDERS = ("TBD", "N/A", "[standard]", "<manufacturer>", "lorem ipsum", "", "unknown", "TBC")
UNKNOWN_VALUES: dict[str, tuple[str, ...]] = {
    "room_type": ("hyperbaric treatment lounge", "quiet recovery pod"),
    "department": ("department of applied radiography", "clinical physics bureau"),
    "equipment_type": ("Hyperion Scanner 3000", "plasma air purifier tower", "flux capacitor bank"),
    "standard": ("ASHRAE 62.9", "IEC 60601-9-99", "NFPA 7000", "ISO 19999-HVAC"),
    "manufacturer": ("Acme Medical", "Globex Climate Systems", "Initech Power"),
    "activity": ("harmonic resonance tuning", "quantum alignment check"),
}


# --- entity matching (the same rule the prose gate applies) ---


def _terms() -> list[tuple[str, str]]:
    """(normalized term, individual) for every fragment, label and synonym, longest first."""
    seen: dict[str, str] = {}
    for ind in INDIVIDUALS:
        for text in (ind.name, ind.label, *ind.alt):
            term = normalize_label(text)
            owner = seen.setdefault(term, ind.name)
            if owner != ind.name:
                raise ValueError(f"term {term!r} names both {owner} and {ind.name}")
    return sorted(((t, n) for t, n in seen.items()), key=lambda tn: (-len(tn[0]), tn[0]))


TERMS: tuple[tuple[str, str], ...] = tuple(_terms())


def find_entities(text: str) -> list[str]:
    """Individuals mentioned in `text`: normalized, word boundaries, longest term first,
    non-overlapping. One entry per mention, in order of position."""
    norm = f" {normalize_label(text)} "
    taken = [False] * len(norm)
    found: list[tuple[int, str]] = []
    for term, name in TERMS:
        needle = f" {term} "
        start = norm.find(needle)
        while start != -1:
            lo, hi = start + 1, start + 1 + len(term)
            if not any(taken[lo:hi]):
                taken[lo:hi] = [True] * (hi - lo)
                found.append((lo, name))
            start = norm.find(needle, start + 1)
    return [name for _, name in sorted(found)]


def count_term(text: str, label: str) -> int:
    """How often `label` occurs in `text` (normalized, word boundaries, overlaps counted)."""
    norm, needle = f" {normalize_label(text)} ", f" {normalize_label(label)} "
    count, start = 0, norm.find(needle)
    while start != -1:
        count, start = count + 1, norm.find(needle, start + 1)
    return count


def resolve(value: object) -> str | None:
    """The individual a cell names (IRI fragment or any label), like `Pools.resolve`."""
    if not isinstance(value, str):
        return None
    if value in BY_NAME:
        return value
    term = normalize_label(value)
    return next((n for t, n in TERMS if t == term), None)


def top_class(name: str) -> str:
    """The top-level value class of an individual."""
    cls = BY_NAME[name].cls
    for parent, subs in DOMAIN_SUBCLASSES.items():
        if cls in subs.values():
            return parent
    return cls
