"""Importers turn API descriptions into catalog Services; they never call the API."""
