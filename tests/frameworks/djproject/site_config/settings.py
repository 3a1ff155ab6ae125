"""A minimal project: the admin, one app, the database named by AUTONUMBER_DATABASE_URL."""

import os
from pathlib import Path

from autonumber.integrations.django import database_settings

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "example-project-not-secret"
DEBUG = True
ALLOWED_HOSTS = ["testserver", "localhost"]
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ROOT_URLCONF = "site_config.urls"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "shop",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

URL = os.environ.get("AUTONUMBER_DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
if URL.startswith(("mysql", "mariadb")):
    import pymysql

    pymysql.install_as_MySQLdb()
DATABASES = {"default": database_settings(URL)}
if os.environ.get("EXAMPLE_TEST_DATABASE"):  # the suite keeps each run's test database apart
    DATABASES["default"]["TEST"] = {"NAME": os.environ["EXAMPLE_TEST_DATABASE"]}
